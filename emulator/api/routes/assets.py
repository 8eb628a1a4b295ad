"""ARM code, environment and model assets: containers (archive), versions, hash lookup, startPendingUpload."""

from collections.abc import Callable
from typing import Annotated, Any

from fastapi import APIRouter, Body, Depends, Query
from fastapi.responses import JSONResponse

from emulator.api.arm import assets as arm_assets
from emulator.api.deps import WS_PATH, Ctx, Ws, authorized
from emulator.domain.assets import versioned as rules
from emulator.services import assets, models, workspaces
from emulator.store.repositories import Repository
from emulator.store.tables import AssetVersion

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
        with ctx.store.transaction() as repo:
            workspace = workspaces.get(repo, ws)
            grouped = assets.containers(repo, ws, kind, query.view)
            return {"value": [arm_assets.container(rows, workspace) for rows in grouped.values()], "nextLink": None}

    @router.get(named, name=f"get_{kind}_container")
    def get_container(ctx: Ctx, ws: Ws, name: str) -> dict:
        with ctx.store.transaction() as repo:
            workspace = workspaces.get(repo, ws)
            return arm_assets.container(assets.container(repo, ws, kind, name), workspace)

    @router.put(named, name=f"put_{kind}_container")
    def put_container(ctx: Ctx, ws: Ws, name: str, body: Annotated[dict[str, Any], Body()]) -> dict:
        """The SDK's archive/restore of a whole asset: its container, read back with isArchived changed."""
        with ctx.store.transaction() as repo:
            workspace = workspaces.get(repo, ws)
            return arm_assets.container(assets.set_archived(repo, ws, kind, name, body, ctx.clock()), workspace)

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


for _kind in (assets.CODES, assets.ENVIRONMENTS, assets.MODELS):
    _register(_kind)

CODE = f"{WS_PATH}/codes/{{name}}"
ENVIRONMENT = f"{WS_PATH}/environments/{{name}}"
MODEL = f"{WS_PATH}/models/{{name}}"


def _page(ctx: Ctx, ws: Ws, query: rules.ListQuery, rows_of: Callable[[Repository], list[AssetVersion]]) -> dict:
    with ctx.store.transaction() as repo:
        workspace = workspaces.get(repo, ws)
        rows = assets.select(rows_of(repo), query)
        return {"value": [arm_assets.version(r, workspace) for r in rows], "nextLink": None}


@router.get(CODE + "/versions")
def list_code_versions(ctx: Ctx, ws: Ws, name: str, order_by: OrderBy = None, top: Top = None, view: View = None,
                       hash: str | None = None, hashVersion: str | None = None) -> dict:
    """With `hash`, the SDK's dedupe lookup: matches across every code asset, whatever `name` says."""
    query = rules.list_query(order_by, top, view)
    return _page(ctx, ws, query, lambda repo: assets.find_by_hash(repo, ws, assets.CODES, hash, hashVersion)
                 if hash is not None else assets.versions(repo, ws, assets.CODES, name))


@router.get(ENVIRONMENT + "/versions")
def list_environment_versions(ctx: Ctx, ws: Ws, name: str, order_by: OrderBy = None, top: Top = None,
                              view: View = None) -> dict:
    query = rules.list_query(order_by, top, view)
    return _page(ctx, ws, query, lambda repo: assets.versions(repo, ws, assets.ENVIRONMENTS, name))


@router.get(MODEL + "/versions")
def list_model_versions(ctx: Ctx, ws: Ws, name: str, order_by: OrderBy = None, top: Top = None, view: View = None,
                        stage: str | None = None) -> dict:
    """`stage`: models.list(name, stage=...) filters on it (case-insensitively, as Azure)."""
    query = rules.list_query(order_by, top, view)
    return _page(ctx, ws, query, lambda repo: models.in_stage(assets.versions(repo, ws, assets.MODELS, name), stage))


@router.post(CODE + "/versions/{version}/startPendingUpload")
def start_pending_upload(ctx: Ctx, ws: Ws, name: str, version: str,
                         body: Annotated[dict[str, Any] | None, Body()] = None) -> dict:
    with ctx.store.transaction() as repo:
        workspace = workspaces.get(repo, ws)
    return assets.start_pending_upload(ctx.settings, ctx.secret, ws, workspace, name, version, body or {},
                                       ctx.clock())
