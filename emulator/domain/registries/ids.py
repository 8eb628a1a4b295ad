"""A registry's name, ids and discovery document. Pure.

Registry names are global: the SDK finds one by name alone (GET /registrymanagement/v1.0/registries/<name>/discovery),
takes its subscription, resource group and data-plane host from the answer, and reads its assets at
<primaryRegionResourceProviderUri>mferp/managementfrontend/subscriptions/.../registries/<name>/<kind>/...
An asset's id is not an ARM id but `azureml://registries/<name>/<kind>/<asset>/versions/<version>`, the form the
SDK parses (and a job names).
"""

import re
from dataclasses import dataclass

from emulator.domain.ids import PROVIDER
from emulator.errors import ValidationFailed

# Azure's rule for a registry's name: 3 to 33 characters, letters, digits, '-' and '_', starting with a letter or digit.
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{2,32}$")
DATA_PLANE_PREFIX = "mferp/managementfrontend"  # what the SDK appends to primaryRegionResourceProviderUri


@dataclass(frozen=True)
class RegistryRef:
    subscription: str
    resource_group: str
    name: str

    @property
    def arm_id(self) -> str:
        return (f"/subscriptions/{self.subscription}/resourceGroups/{self.resource_group}"
                f"/providers/{PROVIDER}/registries/{self.name}")

    @property
    def key(self) -> str:
        """Case-insensitive identity, as ARM treats names."""
        return self.arm_id.lower()

    def asset_id(self, kind: str, asset: str, version: str | None = None) -> str:
        container = f"azureml://registries/{self.name}/{kind}/{asset}"
        return container if version is None else f"{container}/versions/{version}"


def name(value: str) -> str:
    if not _NAME.fullmatch(value):
        raise ValidationFailed(f"Invalid registry name '{value}': 3 to 33 characters, letters, digits, '-' and '_', "
                               "starting with a letter or digit.", target="registryName")
    return value


def discovery(ref: RegistryRef, region: str, provider_uri: str, tenant: str) -> dict:
    """What the discovery route answers (the SDK's RegistryDiscoveryDto); provider_uri ends with '/', to which the
    SDK appends DATA_PLANE_PREFIX."""
    return {"registryName": ref.name, "tenantId": tenant, "primaryRegion": region, "regions": [region],
            "subscriptionId": ref.subscription, "resourceGroup": ref.resource_group, "workspaceName": None,
            "primaryRegionResourceProviderUri": provider_uri, "registryFqdns": {region: provider_uri}}


def list_view(value: str | None) -> str | None:
    """SDK 1.35.2 sends a registry list's listViewType as the enum's str(), 'ListViewType.ACTIVE_ONLY': read as
    the 'ActiveOnly' it means, so domain/assets/versioned.list_query takes it like any other spelling."""
    if value is not None and value.startswith("ListViewType."):
        return value[len("ListViewType."):].replace("_", "")
    return value
