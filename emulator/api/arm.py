"""ARM shapes of stored resources: what the SDK reads back."""

from datetime import datetime

from emulator.domain.compute import cluster

from emulator.domain.storage import blob_access, datastores
from emulator.domain.ids import PROVIDER, WorkspaceRef, location_id
from emulator.services import instances
from emulator.settings import Settings
from emulator.store.tables import Compute, Node, Operation, Workspace

SYSTEM_USER = "amlemu-user@amlemu.local"


def iso(moment: datetime | None) -> str | None:
    return moment.isoformat().replace("+00:00", "Z") if moment else None


def system_data(created: datetime, modified: datetime) -> dict:
    return {"createdAt": iso(created), "createdBy": SYSTEM_USER, "createdByType": "User",
            "lastModifiedAt": iso(modified), "lastModifiedBy": SYSTEM_USER, "lastModifiedByType": "User"}


def _workspace_resources(row: Workspace) -> dict:
    rg = f"/subscriptions/{row.subscription}/resourceGroups/{row.resource_group}/providers"
    short = blob_access.resource_prefix(row.name)
    account = blob_access.workspace_account(WorkspaceRef.of(row))  # the datastores' account, the same function
    return {"storageAccount": blob_access.account_id(row.subscription, row.resource_group, account),
            "keyVault": f"{rg}/Microsoft.KeyVault/vaults/{short}vault",
            "applicationInsights": f"{rg}/Microsoft.insights/components/{short}insights"}


def workspace_id(row: Workspace) -> str:
    return WorkspaceRef.of(row).arm_id


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
             "mlFlowTrackingUri": f"azureml://{row.location}.api.azureml.ms/mlflow/v1.0{arm_id}",
             "creationTime": iso(row.created_at), "storageHnsEnabled": False,
             "privateLinkCount": 0, "notebookInfo": None, "serviceProvisionedResourceGroup": None}
    identity = body.get("identity") or {"type": "SystemAssigned"}
    identity = {**identity, "principalId": "00000000-0000-0000-0000-0000000000a1",
                "tenantId": "72f988bf-0000-0000-0000-00000000a4e1"}
    return {"id": arm_id, "name": row.name, "type": f"{PROVIDER}/workspaces", "location": row.location,
            "tags": body.get("tags", {}), "kind": body.get("kind", "Default"), "identity": identity,
            "sku": {"name": "Basic", "tier": "Basic"}, "systemData": system_data(row.created_at, row.modified_at),
            "properties": props}


def _cluster_status(row: Compute, nodes: list[Node]) -> dict:
    states = [cluster.NodeState(n.state) for n in nodes]
    return {"allocationState": row.allocation_state,
            "allocationStateTransitionTime": iso(row.allocation_changed_at),
            "currentNodeCount": cluster.current_count(states),
            "targetNodeCount": row.target_nodes,
            "nodeStateCounts": cluster.node_state_counts(states),
            "errors": row.errors}


def compute(row: Compute, nodes: list[Node], workspace_row: Workspace | None) -> dict:
    body = row.body
    outer = body["properties"]
    inner = {"isolatedNetwork": False, "remoteLoginPortPublicAccess": "NotSpecified", "enableNodePublicIp": True,
             "subnet": None, "userAccountCredentials": None, "virtualMachineImage": None,
             **outer.get("properties", {})}
    if row.compute_type == "AmlCompute":
        inner.update(_cluster_status(row, nodes))
    elif row.compute_type == "ComputeInstance":
        inner.update(instances.arm_status(row))
    parent = workspace_id(workspace_row) if workspace_row else row.key.rsplit("/computes/", 1)[0]
    arm_id = f"{parent}/computes/{row.name}"
    return {"id": arm_id, "name": row.name, "type": f"{PROVIDER}/workspaces/computes", "location": row.location,
            "tags": body.get("tags", {}), "identity": body.get("identity"),
            "systemData": system_data(row.created_at, row.modified_at),
            "properties": {"computeType": row.compute_type, "computeLocation": row.location,
                           "provisioningState": row.provisioning_state, "description": outer.get("description"),
                           "createdOn": iso(row.created_at), "modifiedOn": iso(row.modified_at),
                           "resourceId": None, "provisioningErrors": row.provisioning_errors,
                           "isAttachedCompute": False, "disableLocalAuth": outer.get("disableLocalAuth", True),
                           "properties": inner}}


def node(row: Node) -> dict:
    return {"nodeId": row.node_id, "privateIpAddress": row.private_ip, "publicIpAddress": "127.0.0.1",
            "port": 50000, "nodeState": row.state, "runId": row.run_id}


def operation(op: Operation, subscription: str, location: str) -> dict:
    return {"id": f"{location_id(subscription, location)}/computeOperationsStatus/{op.id}", "name": op.id,
            "status": op.status, "startTime": iso(op.created_at), "endTime": iso(op.finished_at),
            "error": op.error}
