"""ARM workspaces."""

from typing import Annotated, Any

from fastapi import APIRouter, Body, Depends, Response
from fastapi.responses import JSONResponse

from emulator.api.arm import workspaces as arm
from emulator.api.deps import WORKSPACE_READ, WS_PATH, Caller, Ctx, Ws, authorized, readable

router = APIRouter(dependencies=[Depends(authorized)])
RG_PATH = "/subscriptions/{subscription_id}/resourceGroups/{resource_group}/providers/Microsoft.MachineLearningServices"


@router.get(RG_PATH + "/workspaces")
def list_in_group(ctx: Ctx, caller: Caller, subscription_id: str, resource_group: str) -> dict:
    return _listed(ctx, caller, ctx.services.workspaces.listed(subscription_id, resource_group))


@router.get("/subscriptions/{subscription_id}/providers/Microsoft.MachineLearningServices/workspaces")
def list_in_subscription(ctx: Ctx, caller: Caller, subscription_id: str) -> dict:
    return _listed(ctx, caller, ctx.services.workspaces.listed(subscription_id))


def _listed(ctx: Ctx, caller: dict, rows: list) -> dict:
    """The workspaces the caller may read (ARM filters a list by the caller's role assignments)."""
    may_read = readable(ctx, caller, WORKSPACE_READ)
    return {"value": [arm.workspace(r, ctx.settings) for r in rows if may_read(r.key)], "nextLink": None}


@router.get(WS_PATH)
def get_workspace(ctx: Ctx, ws: Ws) -> dict:
    return arm.workspace(ctx.services.workspaces.get(ws), ctx.settings)


@router.put(WS_PATH)
def put_workspace(ctx: Ctx, ws: Ws, body: Annotated[dict[str, Any], Body()]) -> JSONResponse:
    row, created = ctx.services.workspaces.put(ws, body)
    return JSONResponse(arm.workspace(row, ctx.settings), status_code=201 if created else 200)


@router.patch(WS_PATH)
def patch_workspace(ctx: Ctx, ws: Ws, body: Annotated[dict[str, Any], Body()]) -> dict:
    return arm.workspace(ctx.services.workspaces.patch(ws, body), ctx.settings)


@router.post(WS_PATH + "/listKeys")
def list_keys(ctx: Ctx, ws: Ws) -> dict:
    return arm.keys(ctx.services.workspaces.get(ws))


@router.post(WS_PATH + "/resyncKeys")
def resync_keys(ctx: Ctx, ws: Ws) -> Response:
    ctx.services.workspaces.resync_keys(ws)
    return Response(status_code=200)


@router.post(WS_PATH + "/diagnose")
def start_diagnose(ctx: Ctx, ws: Ws) -> Response:
    """202: the poller reads the result at the Location, where the checks run (services/diagnose.py)."""
    ctx.services.workspaces.get(ws)
    location = f"{ctx.settings.public_url}{ws.arm_id}/diagnose?api-version=2025-12-01"
    return Response(status_code=202, headers={"Location": location, "Retry-After": "1"})


@router.get(WS_PATH + "/diagnose")
def diagnose_result(ctx: Ctx, ws: Ws) -> dict:
    return ctx.services.workspaces.diagnose(ws)


@router.delete(WS_PATH)
def delete_workspace(ctx: Ctx, ws: Ws) -> Response:
    return Response(status_code=200 if ctx.services.workspaces.delete(ws) else 204)
