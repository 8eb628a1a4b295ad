"""A user's registry as ARM holds it (Microsoft.MachineLearningServices/registries): the PUT body checked, and the
resources Azure makes for it in each region. Pure.

Azure gives each replication region a storage account and the registry one container registry, made in a managed
resource group; amlemu keeps one blob account per registry (domain/storage/blob_access.registry_account) and shows
the accounts and the container registry under the names Azure's scheme would give them.
"""

import hashlib

from emulator.domain import payload
from emulator.domain.registries.ids import RegistryRef
from emulator.errors import ValidationFailed

_ACR_SKUS = ("Premium",)  # Azure creates registries' container registries Premium (geo-replication)
_STORAGE_TYPES = ("Standard_LRS", "Standard_GRS", "Standard_RAGRS", "Standard_ZRS", "Standard_GZRS",
                  "Standard_RAGZRS", "Premium_LRS", "Premium_ZRS")
_NETWORK_ACCESS = ("Enabled", "Disabled")
PUBLISHER = "intellectualPropertyPublisher"


def _regions(value: object, primary: str) -> list[dict]:
    """The replication regions, the primary first (added when the body leaves it out, as Azure does)."""
    if value is None:
        value = []
    if not isinstance(value, list):
        raise ValidationFailed("properties.regionDetails must be a list.", target="properties.regionDetails")
    regions: list[dict] = []
    for index, entry in enumerate(value):
        target = f"properties.regionDetails[{index}]"
        entry = payload.obj(entry, target, required=True)
        location = payload.location(entry.get("location"), f"{target}.location")
        if any(r["location"] == location for r in regions):
            raise ValidationFailed(f"{target}.location: region '{location}' is listed twice.",
                                   target=f"{target}.location")
        regions.append({"location": location, "storageAccountType": _storage_type(entry, target)})
    if not any(r["location"] == primary for r in regions):
        regions.insert(0, {"location": primary, "storageAccountType": "Standard_LRS"})
    return sorted(regions, key=lambda r: r["location"] != primary)


def _storage_type(entry: dict, target: str) -> str:
    """The one setting of a region's storage a user chooses (hns and replication are Azure's own business)."""
    details = entry.get("storageAccountDetails") or []
    if not isinstance(details, list):
        raise ValidationFailed(f"{target}.storageAccountDetails must be a list.",
                               target=f"{target}.storageAccountDetails")
    for index, item in enumerate(details):
        created = payload.obj(payload.obj(item, f"{target}.storageAccountDetails[{index}]")
                              .get("systemCreatedStorageAccount"), "systemCreatedStorageAccount")
        kind = created.get("storageAccountType")
        if kind is not None:
            if kind not in _STORAGE_TYPES:
                field = f"{target}.storageAccountDetails[{index}].systemCreatedStorageAccount.storageAccountType"
                raise ValidationFailed(f"{field} must be one of {', '.join(_STORAGE_TYPES)}, got {kind!r}.",
                                       target=field)
            return kind
    return "Standard_LRS"


def validated(body: object) -> dict:
    """What is kept of a registry PUT: location, tags, and the settings a user chooses."""
    body = payload.obj(body, "body", required=True)
    payload.finite(body)
    location = payload.location(body.get("location"))
    props = payload.obj(body.get("properties"), "properties")
    access = props.get("publicNetworkAccess") or "Enabled"
    if access not in _NETWORK_ACCESS:
        raise ValidationFailed(f"properties.publicNetworkAccess must be Enabled or Disabled, got {access!r}.",
                               target="properties.publicNetworkAccess")
    publisher = payload.string(props.get(PUBLISHER), f"properties.{PUBLISHER}")
    identity = payload.obj(body.get("identity"), "identity")
    kind = identity.get("type", "SystemAssigned")
    if kind not in ("SystemAssigned", "None"):
        raise ValidationFailed(f"identity.type must be SystemAssigned or None, got {kind!r}: amlemu has no "
                               "user-assigned identities.", target="identity.type")
    return {"location": location, "tags": payload.tags(body.get("tags")), "identity": kind,
            "publicNetworkAccess": access, PUBLISHER: publisher,
            "regions": _regions(props.get("regionDetails"), location)}


def changed_fixed(old: dict, new: dict) -> str | None:
    """What an update may not change (the primary region: ARM cannot move a resource), or None."""
    return "location" if old["location"] != new["location"] else None


def _suffix(ref: RegistryRef) -> str:
    return hashlib.sha256(ref.key.encode()).hexdigest()[:12]


def managed_resource_group(ref: RegistryRef) -> str:
    """Azure's name for the resource group holding a registry's storage and container registry."""
    return f"azureml-rg-{ref.name}_{_suffix(ref)}"


def acr_name(ref: RegistryRef) -> str:
    return ("".join(c for c in ref.name.lower() if c.isalnum())[:30] + _suffix(ref)[:8])[:50]
