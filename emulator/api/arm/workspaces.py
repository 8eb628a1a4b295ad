"""ARM shape of a workspace: what the SDK reads back."""

from emulator.api.arm.envelope import iso, system_data, workspace_id
from emulator.domain import managed_network
from emulator.domain.ids import PROVIDER, WorkspaceRef
from emulator.domain.jobs import tracking
from emulator.domain.storage import blob_access, datastores
from emulator.services.rows import Workspace
from emulator.settings import Settings


def _workspace_resources(row: Workspace) -> dict:
    rg = f"/subscriptions/{row.subscription}/resourceGroups/{row.resource_group}/providers"
    short = blob_access.resource_prefix(row.name)
    account = blob_access.workspace_account(WorkspaceRef.of(row))  # the datastores' account, the same function
    return {"storageAccount": blob_access.account_id(row.subscription, row.resource_group, account),
            "keyVault": f"{rg}/Microsoft.KeyVault/vaults/{short}vault",
            "applicationInsights": f"{rg}/Microsoft.insights/components/{short}insights"}


def workspace(row: Workspace, settings: Settings) -> dict:
    body = row.body
    arm_id = workspace_id(row)
    # The storage account is the one the datastores use, whatever the PUT named: amlemu keeps one per workspace.
    resources = _workspace_resources(row)
    props = {**resources, "containerRegistry": None, "friendlyName": row.name,
             "description": "", "hbiWorkspace": False, "publicNetworkAccess": "Enabled", "v1LegacyMode": False,
             **body.get("properties", {}), "storageAccount": resources["storageAccount"],
             "workspaceId": datastores.workspace_guid(row.key),
             "provisioningState": "Succeeded",
             "discoveryUrl": f"{settings.public_url}/discovery",
             "mlFlowTrackingUri": tracking.tracking_uri(settings.public_netloc, arm_id),
             "creationTime": iso(row.created_at), "storageHnsEnabled": False,
             "privateLinkCount": 0, "notebookInfo": None, "serviceProvisionedResourceGroup": None,
             "managedNetwork": managed_network.shown(body.get("properties", {}).get("managedNetwork"),
                                                     datastores.workspace_guid(f"{row.key}/managednetwork"))}
    identity = body.get("identity") or {"type": "SystemAssigned"}
    identity = {**identity, "principalId": "00000000-0000-0000-0000-0000000000a1",
                "tenantId": "72f988bf-0000-0000-0000-00000000a4e1"}
    return {"id": arm_id, "name": row.name, "type": f"{PROVIDER}/workspaces", "location": row.location,
            "tags": body.get("tags", {}), "kind": body.get("kind", "Default"), "identity": identity,
            "sku": {"name": "Basic", "tier": "Basic"}, "systemData": system_data(row.created_at, row.modified_at),
            "properties": props}


def keys(row: Workspace) -> dict:
    """ListWorkspaceKeysResult. The emulated storage takes SAS only (the datastores' listSecrets): it has no
    account key to give, nor an Application Insights, a container registry or notebooks."""
    return {"userStorageArmId": _workspace_resources(row)["storageAccount"], "userStorageKey": None,
            "appInsightsInstrumentationKey": None, "containerRegistryCredentials": None, "notebookAccessKeys": None}
