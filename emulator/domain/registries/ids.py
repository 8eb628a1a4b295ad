"""A registry's name, ids and discovery document. Pure.

Registry names are global: the SDK finds one by name alone (GET /registrymanagement/v1.0/registries/<name>/discovery),
takes its subscription, resource group and data-plane host from the answer, and reads its assets at
<primaryRegionResourceProviderUri>mferp/managementfrontend/subscriptions/.../registries/<name>/<kind>/...
An asset's id is not an ARM id but `azureml://registries/<name>/<kind>/<asset>/versions/<version>`, the form the
SDK parses (and a job names).
"""

import re
from dataclasses import dataclass

from emulator.domain import payload
from emulator.domain.ids import PROVIDER
from emulator.errors import ValidationFailed

# Azure's rule for a registry's name: 3 to 33 characters, letters, digits, '-' and '_', starting with a letter or digit.
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{2,32}$")
DATA_PLANE_PREFIX = "mferp/managementfrontend"  # what the SDK appends to primaryRegionResourceProviderUri


@dataclass(frozen=True)
class RegistryRef:
    """A registry holds asset versions as a workspace does (services/assets keys them under `key`)."""
    subscription: str
    resource_group: str
    name: str
    noun = "registry"  # what messages call the assets' owner

    @property
    def arm_id(self) -> str:
        return (f"/subscriptions/{self.subscription}/resourceGroups/{self.resource_group}"
                f"/providers/{PROVIDER}/registries/{self.name}")

    @property
    def key(self) -> str:
        """Case-insensitive identity, as ARM treats names."""
        return self.arm_id.lower()

    def child_id(self, kind: str, name: str) -> str:
        """The id an asset's versions are stored under (an ARM-style id; clients see asset_id)."""
        return f"{self.arm_id}/{kind}/{name}"

    def asset_id(self, kind: str, asset: str, version: str | None = None) -> str:
        container = f"azureml://registries/{self.name}/{kind}/{asset}"
        return container if version is None else f"{container}/versions/{version}"


@dataclass(frozen=True)
class AssetRef:
    """An asset of a registry as a job or a deployment names it: a version, or a label (only 'latest')."""
    registry: str
    kind: str
    name: str
    version: str | None
    label: str | None


_ASSET = re.compile(r"^azureml://registries/(?P<registry>[^/]+)/(?P<kind>[^/]+)/(?P<name>[^/]+)"
                    r"/(?:versions/(?P<version>[^/]+)|labels/(?P<label>[^/]+))/?$", re.IGNORECASE)


def is_asset_id(value: object) -> bool:
    return isinstance(value, str) and value.lower().startswith("azureml://registries/")


def asset_ref(value: str, kind: str, target: str) -> AssetRef:
    """azureml://registries/<registry>/<kind>/<name>/versions/<version> or .../labels/latest."""
    match = _ASSET.fullmatch(value.strip())
    if not match or match["kind"].lower() != kind:
        raise ValidationFailed(f"{target} must name a {kind[:-1]} of a registry as azureml://registries/<registry>/"
                               f"{kind}/<name>/versions/<version> or .../labels/latest, got {value[:200]!r}.",
                               target=target)
    if match["label"] is not None and match["label"].lower() != "latest":
        raise ValidationFailed(f"{target}: registry assets have the label 'latest' only, not '{match['label']}'.",
                               target=target)
    return AssetRef(match["registry"], kind, match["name"], match["version"], match["label"] and "latest")


def name(value: str) -> str:
    if not _NAME.fullmatch(value):
        raise ValidationFailed(f"Invalid registry name '{value}': 3 to 33 characters, letters, digits, '-' and '_', "
                               "starting with a letter or digit.", target="registryName")
    return value


def discovery(ref: RegistryRef, regions: list[str], provider_uri: str, tenant: str) -> dict:
    """What the discovery route answers (the SDK's RegistryDiscoveryDto), the primary region first; provider_uri
    ends with '/', to which the SDK appends DATA_PLANE_PREFIX. Every region is this one emulator."""
    return {"registryName": ref.name, "tenantId": tenant, "primaryRegion": regions[0], "regions": regions,
            "subscriptionId": ref.subscription, "resourceGroup": ref.resource_group, "workspaceName": None,
            "primaryRegionResourceProviderUri": provider_uri,
            "registryFqdns": {region: provider_uri for region in regions}}


def list_view(value: str | None) -> str | None:
    """SDK 1.35.2 sends a registry list's listViewType as the enum's str(), 'ListViewType.ACTIVE_ONLY': read as
    the 'ActiveOnly' it means, so domain/assets/versioned.list_query takes it like any other spelling."""
    if value is not None and value.startswith("ListViewType."):
        return value[len("ListViewType."):].replace("_", "")
    return value


def owner_of(key: str) -> RegistryRef | None:
    """The registry a stored key belongs to (a lower-cased id under .../registries/<name>/...), or None when it
    is a workspace's."""
    parts = key.split("/")
    if len(parts) > 8 and parts[7] == "registries":
        return RegistryRef(parts[2], parts[4], parts[8])
    return None


def import_properties(body: object) -> dict:
    """An import's body (the SDK's share()): {"properties": {"referenceType": "Id", "sourceAssetId",
    "destinationName"?, "destinationVersion"?}}."""
    props = payload.obj(payload.obj(body, "body", required=True).get("properties"), "properties", required=True)
    if props.get("referenceType", "Id") != "Id":
        raise ValidationFailed(f"properties.referenceType must be Id, got {props.get('referenceType')!r}.",
                               target="properties.referenceType")
    for key in ("destinationName", "destinationVersion"):
        payload.string(props.get(key), f"properties.{key}")
    payload.required_string(props.get("sourceAssetId"), "properties.sourceAssetId")
    return props


def asset_id_kind(body: object) -> str:
    """The kind of asset a datarefs body names: {"assetId": "azureml://registries/<r>/<kind>/<name>/versions/<v>"}."""
    given = payload.obj(body, "body", required=True).get("assetId")
    match = _ASSET.fullmatch(given) if isinstance(given, str) else None
    if match is None or match["kind"] not in ("codes", "models", "data"):
        raise ValidationFailed("assetId must be azureml://registries/<registry>/<codes|models|data>/<name>/versions/"
                               f"<version>, got {str(given)[:200]!r}.", target="assetId")
    return match["kind"]


SHARED_KINDS = ("models", "environments", "data")  # what the SDK's share() promotes
_SOURCE = re.compile(r"^azureml://locations/[^/]+/workspaces/(?P<guid>[^/]+)/(?P<kind>[^/]+)/(?P<name>[^/]+)"
                     r"/versions/(?P<version>[^/]+)$", re.IGNORECASE)


@dataclass(frozen=True)
class SourceAsset:
    """A workspace asset as share() names it: by the workspace's GUID (ARM's properties.workspaceId)."""
    workspace_guid: str
    kind: str
    name: str
    version: str


def source_asset(value: object, target: str) -> SourceAsset:
    match = _SOURCE.fullmatch(value) if isinstance(value, str) else None
    if match is None or match["kind"] not in SHARED_KINDS:
        raise ValidationFailed(f"{target} must be azureml://locations/<location>/workspaces/<workspace id>/"
                               f"<{'|'.join(SHARED_KINDS)}>/<name>/versions/<version>, got {str(value)[:200]!r}.",
                               target=target)
    return SourceAsset(match["guid"].lower(), match["kind"], match["name"], match["version"])
