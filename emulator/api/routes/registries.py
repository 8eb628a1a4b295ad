"""Registries: discovery by name, then the data plane the SDK reads under the discovered host's
mferp/managementfrontend prefix (api-version 2021-10-01-dataplanepreview): asset containers and versions."""

from typing import Annotated

from fastapi import APIRouter, Depends, Query

from emulator.api.arm import registries as arm
from emulator.api.deps import Ctx, authorized
from emulator.domain.assets import versioned as rules
from emulator.domain.registries.ids import DATA_PLANE_PREFIX, RegistryRef, list_view

router = APIRouter(dependencies=[Depends(authorized)])
OrderBy = Annotated[str | None, Query(alias="$orderBy")]
Top = Annotated[str | None, Query(alias="$top")]
View = Annotated[str | None, Query(alias="listViewType")]

DISCOVERY = "/registrymanagement/v1.0/registries/{registry_name}/discovery"
REGISTRY_PATH = (f"/{DATA_PLANE_PREFIX}/subscriptions/{{subscription_id}}/resourceGroups/{{resource_group}}"
                 "/providers/Microsoft.MachineLearningServices/registries/{registry_name}")
KINDS = ("codes", "components", "data", "environments", "models")


def registry_ref(subscription_id: str, resource_group: str, registry_name: str) -> RegistryRef:
    return RegistryRef(subscription_id, resource_group, registry_name)


Reg = Annotated[RegistryRef, Depends(registry_ref)]


@router.get(DISCOVERY)
def discovery(ctx: Ctx, registry_name: str) -> dict:
    return ctx.services.registries.discovery(registry_name)


def _register(kind: str) -> None:
    collection = f"{REGISTRY_PATH}/{kind}"
    named = collection + "/{name}"

    @router.get(collection, name=f"list_registry_{kind}")
    def list_containers(ctx: Ctx, reg: Reg, view: View = None) -> dict:
        query = rules.list_query(None, None, list_view(view))
        grouped, found = ctx.services.registries.containers(reg, kind, query.view)
        return {"value": [arm.container(assets, found) for assets in grouped], "nextLink": None}

    @router.get(named, name=f"get_registry_{kind}_container")
    def get_container(ctx: Ctx, reg: Reg, name: str) -> dict:
        return arm.container(*ctx.services.registries.container(reg, kind, name))

    @router.get(named + "/versions", name=f"list_registry_{kind}_versions")
    def list_versions(ctx: Ctx, reg: Reg, name: str, order_by: OrderBy = None, top: Top = None,
                      view: View = None) -> dict:
        query = rules.list_query(order_by, top, list_view(view))
        found, ref = ctx.services.registries.versions(reg, kind, name, query)
        return {"value": [arm.version(asset, ref) for asset in found], "nextLink": None}

    @router.get(named + "/versions/{version}", name=f"get_registry_{kind}_version")
    def get_version(ctx: Ctx, reg: Reg, name: str, version: str) -> dict:
        return arm.version(*ctx.services.registries.version(reg, kind, name, version))

    @router.put(named, name=f"put_registry_{kind}_container")
    def put_container(ctx: Ctx, reg: Reg, name: str) -> None:
        """The SDK's archive or restore of a whole asset."""
        ctx.services.registries.write(reg, kind, "write")

    @router.put(named + "/versions/{version}", name=f"put_registry_{kind}_version")
    def put_version(ctx: Ctx, reg: Reg, name: str, version: str) -> None:
        """A create, update, archive or restore of one version."""
        ctx.services.registries.write(reg, kind, "versions/write")


for _kind in KINDS:
    _register(_kind)


@router.put(REGISTRY_PATH + "/tempdatarefs/{name}/versions/{version}")
def start_upload(ctx: Ctx, reg: Reg, name: str, version: str) -> None:
    """The blob a create in a registry uploads its files to: the SDK asks for it before the version's PUT."""
    ctx.services.registries.write(reg, "tempdatarefs", "write")


@router.post(REGISTRY_PATH + "/import")
def import_asset(ctx: Ctx, reg: Reg) -> None:
    """A workspace asset copied into the registry (share)."""
    ctx.services.registries.write(reg, "import", "action")
