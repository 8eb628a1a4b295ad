"""ARM code, environment, model, data and component assets: containers (archive), versions, hash lookup, startPendingUpload."""

from typing import Annotated, Any

from fastapi import APIRouter, Body, Depends, Query
from fastapi.responses import JSONResponse

from emulator.api.arm import assets as arm
from emulator.api.deps import WS_PATH, Ctx, Ws, authorized
from emulator.domain.assets import versioned as rules
from emulator.services.assets import CODES, COMPONENTS, DATA, ENVIRONMENTS, MODELS
from emulator.services.rows import AssetVersion, Workspace

router = APIRouter(dependencies=[Depends(authorized)])
OrderBy = Annotated[str | None, Query(alias="$orderBy")]
Top = Annotated[str | None, Query(alias="$top")]
View = Annotated[str | None, Query(alias="listViewType")]


def _register(kind: str) -> None:
    collection = f"{WS_PATH}/{kind}"
    named = collection + "/{name}"

    @router.get(collection, name=f"list_{kind}")
    def list_containers(ctx: Ctx, ws: Ws, view: View = None) -> dict:
        query = rules.list_query(None, None, view)
        grouped, workspace = ctx.services.assets.containers(ws, kind, query.view)
        return {"value": [arm.container(rows, workspace) for rows in grouped], "nextLink": None}

    @router.get(named, name=f"get_{kind}_container")
    def get_container(ctx: Ctx, ws: Ws, name: str) -> dict:
        return arm.container(*ctx.services.assets.container(ws, kind, name))

    @router.put(named, name=f"put_{kind}_container")
    def put_container(ctx: Ctx, ws: Ws, name: str, body: Annotated[dict[str, Any], Body()]) -> dict:
        """The SDK's archive/restore of a whole asset: its container, read back with isArchived changed."""
        return arm.container(*ctx.services.assets.set_archived(ws, kind, name, body))

    @router.get(named + "/versions/{version}", name=f"get_{kind}_version")
    def get_version(ctx: Ctx, ws: Ws, name: str, version: str) -> dict:
        return arm.version(*ctx.services.assets.get(ws, kind, name, version))

    @router.put(named + "/versions/{version}", name=f"put_{kind}_version")
    def put_version(ctx: Ctx, ws: Ws, name: str, version: str,
                    body: Annotated[dict[str, Any], Body()]) -> JSONResponse:
        row, created, workspace = ctx.services.assets.put(ws, kind, name, version, body)
        return JSONResponse(arm.version(row, workspace), status_code=201 if created else 200)


for _kind in (CODES, ENVIRONMENTS, MODELS, DATA, COMPONENTS):
    _register(_kind)

CODE = f"{WS_PATH}/codes/{{name}}"
ENVIRONMENT = f"{WS_PATH}/environments/{{name}}"
MODEL = f"{WS_PATH}/models/{{name}}"
DATA_ASSET = f"{WS_PATH}/data/{{name}}"
COMPONENT = f"{WS_PATH}/components/{{name}}"


def _page(found: tuple[list[AssetVersion], Workspace]) -> dict:
    rows, workspace = found
    return {"value": [arm.version(r, workspace) for r in rows], "nextLink": None}


@router.get(CODE + "/versions")
def list_code_versions(ctx: Ctx, ws: Ws, name: str, order_by: OrderBy = None, top: Top = None, view: View = None,
                       hash: str | None = None, hashVersion: str | None = None) -> dict:
    """With `hash`, the SDK's dedupe lookup: matches across every code asset, whatever `name` says."""
    query = rules.list_query(order_by, top, view)
    return _page(ctx.services.assets.code_versions(ws, name, query, hash, hashVersion))


@router.get(ENVIRONMENT + "/versions")
def list_environment_versions(ctx: Ctx, ws: Ws, name: str, order_by: OrderBy = None, top: Top = None,
                              view: View = None) -> dict:
    query = rules.list_query(order_by, top, view)
    return _page(ctx.services.assets.environment_versions(ws, name, query))


@router.get(MODEL + "/versions")
def list_model_versions(ctx: Ctx, ws: Ws, name: str, order_by: OrderBy = None, top: Top = None, view: View = None,
                        stage: str | None = None) -> dict:
    """`stage`: models.list(name, stage=...) filters on it (case-insensitively, as Azure)."""
    query = rules.list_query(order_by, top, view)
    return _page(ctx.services.assets.model_versions(ws, name, query, stage))


@router.get(DATA_ASSET + "/versions")
def list_data_versions(ctx: Ctx, ws: Ws, name: str, order_by: OrderBy = None, top: Top = None,
                       view: View = None) -> dict:
    query = rules.list_query(order_by, top, view)
    return _page(ctx.services.assets.versions(ws, DATA, name, query))


@router.get(COMPONENT + "/versions")
def list_component_versions(ctx: Ctx, ws: Ws, name: str, order_by: OrderBy = None, top: Top = None,
                            view: View = None) -> dict:
    """Anonymous versions too, when asked by their name (azureml_anonymous): only the container list hides them."""
    query = rules.list_query(order_by, top, view)
    return _page(ctx.services.assets.versions(ws, COMPONENTS, name, query))


@router.post(CODE + "/versions/{version}/startPendingUpload")
def start_pending_upload(ctx: Ctx, ws: Ws, name: str, version: str,
                         body: Annotated[dict[str, Any] | None, Body()] = None) -> dict:
    return ctx.services.assets.start_pending_upload(ws, name, version, body or {})
