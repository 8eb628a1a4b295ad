"""Registry shapes: the ARM resource (Microsoft.MachineLearningServices/registries), and the data plane's asset
versions and containers with the azureml://registries/... ids the SDK parses."""

from emulator.api.arm.envelope import iso, system_data
from emulator.domain.assets import versioned
from emulator.domain.ids import PROVIDER
from emulator.domain.registries import builtin, resource
from emulator.domain.registries.ids import RegistryRef
from emulator.domain.storage import blob_access
from emulator.services.rows import Registry
from emulator.settings import Settings

# Azure's curated environments are published by Azure ML itself, not by a user.
_PUBLISHER = "azureml"
_IDENTITY = {"principalId": "00000000-0000-0000-0000-0000000000a2", "tenantId": "72f988bf-0000-0000-0000-00000000a4e1"}


def _system_data(asset, ref: RegistryRef) -> dict:
    if ref.name.lower() != builtin.NAME:
        return system_data(asset.created_at, getattr(asset, "modified_at", asset.created_at))
    return {"createdAt": iso(asset.created_at), "createdBy": _PUBLISHER, "createdByType": "Application",
            "lastModifiedAt": iso(asset.created_at), "lastModifiedBy": _PUBLISHER,
            "lastModifiedByType": "Application"}


def version(asset, ref: RegistryRef) -> dict:
    """asset: a builtin.Asset or a stored AssetVersion (the same fields)."""
    props = {k: v for k, v in asset.body.items() if v is not None}
    props["provisioningState"] = "Succeeded"
    if asset.kind == "environments":
        props["environmentType"] = "Curated" if ref.name.lower() == builtin.NAME else "UserCreated"
    name = versioned.unprefixed(asset.name)
    return {"id": ref.asset_id(asset.kind, name, asset.version), "name": asset.version,
            "type": f"{PROVIDER}/registries/{asset.kind}/versions", "systemData": _system_data(asset, ref),
            "properties": props}


def container(assets: list, ref: RegistryRef) -> dict:
    """assets: the versions of one asset, oldest first."""
    first, latest = assets[0], assets[-1]
    name = versioned.unprefixed(first.name)
    return {"id": ref.asset_id(first.kind, name), "name": name,
            "type": f"{PROVIDER}/registries/{first.kind}", "systemData": _system_data(latest, ref),
            "properties": {"latestVersion": latest.version,
                           "nextVersion": versioned.next_version([a.version for a in assets]),
                           "isArchived": versioned.all_archived([a.body for a in assets]),
                           "description": None, "tags": {}, "properties": {}, "provisioningState": "Succeeded"}}


def _region(ref: RegistryRef, region: dict, rg_id: str) -> dict:
    account = blob_access.registry_account(ref)
    acr = resource.acr_name(ref)
    return {"location": region["location"],
            "acrDetails": [{"systemCreatedAcrAccount": {
                "acrAccountName": acr, "acrAccountSku": "Premium",
                "armResourceId": {"resourceId": f"{rg_id}/providers/Microsoft.ContainerRegistry/registries/{acr}"}}}],
            "storageAccountDetails": [{"systemCreatedStorageAccount": {
                "storageAccountName": account, "storageAccountType": region["storageAccountType"],
                "storageAccountHnsEnabled": False, "allowBlobPublicAccess": False,
                "armResourceId": {"resourceId": f"{rg_id}/providers/Microsoft.Storage/storageAccounts/{account}"}}}]}


def registry(row: Registry, settings: Settings) -> dict:
    ref = RegistryRef(row.subscription, row.resource_group, row.name)
    body = row.body
    rg_id = f"/subscriptions/{row.subscription}/resourceGroups/{resource.managed_resource_group(ref)}"
    identity = {"type": body["identity"], **(_IDENTITY if body["identity"] == "SystemAssigned" else {})}
    props = {"discoveryUrl": f"{settings.public_url}/registrymanagement/v1.0/registries/{row.name}/discovery",
             "intellectualPropertyPublisher": body[resource.PUBLISHER],
             "managedResourceGroup": {"resourceId": rg_id},
             "mlFlowRegistryUri": f"azureml://{settings.public_netloc}/mlflow/v1.0{ref.arm_id}",
             "publicNetworkAccess": body["publicNetworkAccess"],
             "regionDetails": [_region(ref, region, rg_id) for region in body["regions"]],
             "registryPrivateEndpointConnections": [], "managedResourceGroupTags": body["tags"],
             "provisioningState": "Succeeded"}
    return {"id": ref.arm_id, "name": row.name, "type": f"{PROVIDER}/registries", "location": row.location,
            "tags": body["tags"], "kind": "", "identity": identity, "sku": {"name": "P3", "tier": "Basic"},
            "systemData": system_data(row.created_at, row.modified_at), "properties": props}
