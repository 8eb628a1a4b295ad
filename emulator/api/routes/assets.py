"""ARM code and environment assets: containers, versions, hash lookup, startPendingUpload."""

from typing import Annotated, Any

from fastapi import APIRouter, Body, Depends, Query
from fastapi.responses import JSONResponse

from emulator.api import arm_assets
from emulator.api.deps import WS_PATH, Ctx, Ws, authorized
from emulator.domain import assets as rules
from emulator.services import assets, workspaces

router = APIRouter(dependencies=[Depends(authorized)])
OrderBy = Annotated[str | None, Query(alias="$orderBy")]
Top = Annotated[str | None, Query(alias="$top")]
View = Annotated[str | None, Query(alias="listViewType")]


def _register(kind: str) -> None:
    collection = f"{WS_PATH}/{kind}"
    named = collection + "/{name}"

    @router.get(collection, name=f"list_{kind}")
    def list_containers(ctx: Ctx, ws: Ws) -> dict:
        with ctx.store.transaction() as repo:
            workspace = workspaces.get(repo, ws)
            grouped = assets.containers(repo, ws, kind)
            return {"value": [arm_assets.container(rows, workspace) for rows in grouped.values()], "nextLink": None}

    @router.get(named, name=f"get_{kind}_container")
    def get_container(ctx: Ctx, ws: Ws, name: str) -> dict:
        with ctx.store.transaction() as repo:
            workspace = workspaces.get(repo, ws)
            return arm_assets.container(assets.container(repo, ws, kind, name), workspace)

    @router.get(named + "/versions/{version}", name=f"get_{kind}_version")
    def get_version(ctx: Ctx, ws: Ws, name: str, version: str) -> dict:
        with ctx.store.transaction() as repo:
            workspace = workspaces.get(repo, ws)
            return arm_assets.version(assets.get(repo, ws, kind, name, version), workspace)

    @router.put(named + "/versions/{version}", name=f"put_{kind}_version")
    def put_version(ctx: Ctx, ws: Ws, name: str, version: str,
                    body: Annotated[dict[str, Any], Body()]) -> JSONResponse:
        with ctx.store.transaction() as repo:
            workspace = workspaces.get(repo, ws)
            row, created = assets.put(repo, ws, kind, name, version, body, ctx.clock())
            return JSONResponse(arm_assets.version(row, workspace), status_code=201 if created else 200)


for _kind in (assets.CODES, assets.ENVIRONMENTS):
    _register(_kind)

CODE = f"{WS_PATH}/codes/{{name}}"
ENVIRONMENT = f"{WS_PATH}/environments/{{name}}"


@router.get(CODE + "/versions")
def list_code_versions(ctx: Ctx, ws: Ws, name: str, order_by: OrderBy = None, top: Top = None, view: View = None,
                       hash: str | None = None, hashVersion: str | None = None) -> dict:
    """With `hash`, the SDK's dedupe lookup: matches across every code asset, whatever `name` says."""
    query = rules.list_query(order_by, top, view)
    with ctx.store.transaction() as repo:
        workspace = workspaces.get(repo, ws)
        rows = assets.find_by_hash(repo, ws, assets.CODES, hash, hashVersion) if hash is not None \
            else assets.versions(repo, ws, assets.CODES, name)
        return {"value": [arm_assets.version(r, workspace) for r in assets.select(rows, query)], "nextLink": None}


@router.get(ENVIRONMENT + "/versions")
def list_environment_versions(ctx: Ctx, ws: Ws, name: str, order_by: OrderBy = None, top: Top = None,
                              view: View = None) -> dict:
    query = rules.list_query(order_by, top, view)
    with ctx.store.transaction() as repo:
        workspace = workspaces.get(repo, ws)
        rows = assets.versions(repo, ws, assets.ENVIRONMENTS, name)
        return {"value": [arm_assets.version(r, workspace) for r in assets.select(rows, query)], "nextLink": None}


@router.post(CODE + "/versions/{version}/startPendingUpload")
def start_pending_upload(ctx: Ctx, ws: Ws, name: str, version: str,
                         body: Annotated[dict[str, Any] | None, Body()] = None) -> dict:
    with ctx.store.transaction() as repo:
        workspace = workspaces.get(repo, ws)
    return assets.start_pending_upload(ctx.settings, ctx.secret, ws, workspace, name, version, body or {},
                                       ctx.clock())
