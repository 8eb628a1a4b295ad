"""ARM workspaces."""

from typing import Annotated, Any

from fastapi import APIRouter, Body, Depends, Response
from fastapi.responses import JSONResponse

from emulator.api.arm import workspaces as arm
from emulator.api.deps import WS_PATH, Ctx, Ws, authorized
from emulator.domain.storage import blob_access
from emulator.services import workspace_delete, workspaces
from emulator.services.blobs import BlobStore

router = APIRouter(dependencies=[Depends(authorized)])
RG_PATH = "/subscriptions/{subscription_id}/resourceGroups/{resource_group}/providers/Microsoft.MachineLearningServices"


@router.get(RG_PATH + "/workspaces")
def list_in_group(ctx: Ctx, subscription_id: str, resource_group: str) -> dict:
    with ctx.store.transaction() as repo:
        rows = repo.workspaces(subscription_id, resource_group)
        return {"value": [arm.workspace(r, ctx.settings) for r in rows], "nextLink": None}


@router.get("/subscriptions/{subscription_id}/providers/Microsoft.MachineLearningServices/workspaces")
def list_in_subscription(ctx: Ctx, subscription_id: str) -> dict:
    with ctx.store.transaction() as repo:
        rows = repo.workspaces(subscription_id)
        return {"value": [arm.workspace(r, ctx.settings) for r in rows], "nextLink": None}


@router.get(WS_PATH)
def get_workspace(ctx: Ctx, ws: Ws) -> dict:
    with ctx.store.transaction() as repo:
        return arm.workspace(workspaces.get(repo, ws), ctx.settings)


@router.put(WS_PATH)
def put_workspace(ctx: Ctx, ws: Ws, body: Annotated[dict[str, Any], Body()]) -> JSONResponse:
    with ctx.store.transaction() as repo:
        row, created = workspaces.put(repo, ws, body, ctx.clock())
        return JSONResponse(arm.workspace(row, ctx.settings), status_code=201 if created else 200)


@router.patch(WS_PATH)
def patch_workspace(ctx: Ctx, ws: Ws, body: Annotated[dict[str, Any], Body()]) -> dict:
    with ctx.store.transaction() as repo:
        return arm.workspace(workspaces.patch(repo, ws, body, ctx.clock()), ctx.settings)


@router.delete(WS_PATH)
def delete_workspace(ctx: Ctx, ws: Ws) -> Response:
    with ctx.store.transaction() as repo:
        found = workspace_delete.delete(repo, ws, ctx.clock())
    if found:  # its storage account goes with it (the controller forgets its jobs once they have ended)
        BlobStore(ctx.settings.data_dir).drop_account(blob_access.workspace_account(ws))
    return Response(status_code=200 if found else 204)
