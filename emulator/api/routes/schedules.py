"""ARM job schedules: create or update, read, list, delete. The controller fires them (services/schedules.py)."""

from typing import Annotated, Any

from fastapi import APIRouter, Body, Depends, Query, Response

from emulator.api import lro
from emulator.api.arm import schedules as arm
from emulator.api.deps import WS_PATH, Ctx, Ws, authorized

router = APIRouter(dependencies=[Depends(authorized)])
SCHEDULE = f"{WS_PATH}/schedules/{{name}}"


@router.put(SCHEDULE)
def put_schedule(ctx: Ctx, ws: Ws, name: str, body: Annotated[dict[str, Any], Body()]) -> Response:
    row, created, op, workspace = ctx.services.schedules.put(ws, name, body)
    url = lro.status_url(ctx.settings, ws.subscription, workspace.location, op)
    return lro.accepted(arm.schedule(row, workspace), 201 if created else 200, url)


@router.get(SCHEDULE)
def get_schedule(ctx: Ctx, ws: Ws, name: str) -> dict:
    return arm.schedule(*ctx.services.schedules.get(ws, name))


@router.get(f"{WS_PATH}/schedules")
def list_schedules(ctx: Ctx, ws: Ws, view: Annotated[str | None, Query(alias="listViewType")] = None) -> dict:
    rows, workspace = ctx.services.schedules.listed(ws, view)
    return {"value": [arm.schedule(row, workspace) for row in rows], "nextLink": None}


@router.delete(SCHEDULE)
def delete_schedule(ctx: Ctx, ws: Ws, name: str) -> Response:
    """202 and an operation (already done) when it was there, 204 when it was not."""
    op, workspace = ctx.services.schedules.delete(ws, name)
    return lro.started(ctx.settings, ws.subscription, workspace.location, op)
