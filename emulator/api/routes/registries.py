"""Registries: discovery by name, then the data plane the SDK uses under the discovered host's
mferp/managementfrontend prefix (api-version 2021-10-01-dataplanepreview): asset containers and versions, uploads
(tempdatarefs), downloads (datarefs) and imports (share)."""

from typing import Annotated, Any

from fastapi import APIRouter, Body, Depends, Query, Response
from fastapi.responses import JSONResponse

from emulator.api.arm import registries as arm
from emulator.api.deps import Ctx, registry_caller
from emulator.domain.assets import versioned as rules
from emulator.domain.registries.ids import DATA_PLANE_PREFIX, RegistryRef, list_view

router = APIRouter(dependencies=[Depends(registry_caller)])
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
Json = Annotated[dict[str, Any], Body()]


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
    def put_container(ctx: Ctx, reg: Reg, name: str, body: Json) -> dict:
        """The SDK's archive or restore of a whole asset."""
        return arm.container(*ctx.services.registries.set_archived(reg, kind, name, body))

    @router.put(named + "/versions/{version}", name=f"put_registry_{kind}_version")
    def put_version(ctx: Ctx, reg: Reg, name: str, version: str, body: Json) -> JSONResponse:
        """A create, update, archive or restore of one version: done when it returns (no operation to poll)."""
        row, created, ref = ctx.services.registries.put_version(reg, kind, name, version, body)
        return JSONResponse(arm.version(row, ref), status_code=201 if created else 200)


for _kind in KINDS:
    _register(_kind)


@router.put(REGISTRY_PATH + "/tempdatarefs/{name}/versions/{version}")
def start_upload(ctx: Ctx, reg: Reg, name: str, version: str, body: Json) -> dict:
    """The container a create in a registry uploads its files to: the SDK asks for it before the version's PUT."""
    return ctx.services.registries.temporary_reference(reg, name, version, body)


@router.post(REGISTRY_PATH + "/datarefs/{name}/versions/{version}")
def read_reference(ctx: Ctx, reg: Reg, name: str, version: str, body: Json) -> dict:
    """A read SAS on a version's files (its kind in the body's assetId), as a download asks for it."""
    return ctx.services.registries.read_reference(reg, name, version, body)


@router.post(REGISTRY_PATH + "/import")
def import_asset(ctx: Ctx, reg: Reg, body: Json) -> Response:
    """A workspace asset copied into the registry (share): 202 and a Location that answers 200 without a body,
    after which the SDK reads the new version (a body would send it on to upload files)."""
    op, ref = ctx.services.registries.import_asset(reg, body)
    return Response(status_code=202, headers={"Location": _import_status(ctx, ref, op.id), "Retry-After": "1"})


@router.get(REGISTRY_PATH + "/import/operations/{operation_id}")
def import_status(ctx: Ctx, reg: Reg, operation_id: str) -> Response:
    op = ctx.services.registries.operation(reg, operation_id)
    if op.status == "InProgress":
        return Response(status_code=202, headers={"Location": _import_status(ctx, reg, op.id), "Retry-After": "1"})
    if op.status != "Succeeded":
        return JSONResponse({"error": op.error or {"code": op.status, "message": f"The import {op.status}."}},
                            status_code=400)
    return Response(status_code=200)


def _import_status(ctx: Ctx, ref: RegistryRef, operation_id: str) -> str:
    path = REGISTRY_PATH.format(subscription_id=ref.subscription, resource_group=ref.resource_group,
                                registry_name=ref.name)
    return f"{ctx.settings.public_url}{path}/import/operations/{operation_id}?api-version=2021-10-01-dataplanepreview"
