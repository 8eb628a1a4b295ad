"""Registry data-plane shapes: asset versions and containers, with the azureml://registries/... ids the SDK parses."""

from emulator.api.arm.envelope import iso
from emulator.domain.assets import versioned
from emulator.domain.ids import PROVIDER
from emulator.domain.registries.builtin import Asset
from emulator.domain.registries.ids import RegistryRef

# Azure's curated environments are published by Azure ML itself, not by a user.
_PUBLISHER = "azureml"


def _system_data(asset: Asset) -> dict:
    return {"createdAt": iso(asset.created_at), "createdBy": _PUBLISHER, "createdByType": "Application",
            "lastModifiedAt": iso(asset.created_at), "lastModifiedBy": _PUBLISHER,
            "lastModifiedByType": "Application"}


def version(asset: Asset, ref: RegistryRef) -> dict:
    props = {k: v for k, v in asset.body.items() if v is not None}
    props["provisioningState"] = "Succeeded"
    if asset.kind == "environments":
        props["environmentType"] = "Curated"
    return {"id": ref.asset_id(asset.kind, asset.name, asset.version), "name": asset.version,
            "type": f"{PROVIDER}/registries/{asset.kind}/versions", "systemData": _system_data(asset),
            "properties": props}


def container(assets: list[Asset], ref: RegistryRef) -> dict:
    """assets: the versions of one asset, oldest first."""
    first, latest = assets[0], assets[-1]
    return {"id": ref.asset_id(first.kind, first.name), "name": first.name,
            "type": f"{PROVIDER}/registries/{first.kind}", "systemData": _system_data(latest),
            "properties": {"latestVersion": latest.version,
                           "nextVersion": versioned.next_version([a.version for a in assets]),
                           "isArchived": versioned.all_archived([a.body for a in assets]),
                           "description": None, "tags": {}, "properties": {}, "provisioningState": "Succeeded"}}
