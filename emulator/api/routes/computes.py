"""ARM computes of a workspace: CRUD with long-running operations, listNodes, and the compute-instance
actions (start, stop, restart, updateIdleShutdownSetting)."""

from typing import Annotated, Any

from fastapi import APIRouter, Body, Depends, Response

from emulator.api import lro
from emulator.api.arm import computes as arm
from emulator.api.deps import WS_PATH, Ctx, Ws, authorized
from emulator.errors import ValidationFailed
from emulator.services.facade.computes import ComputeView

router = APIRouter(dependencies=[Depends(authorized)])
COMPUTE = WS_PATH + "/computes/{compute_name}"


def _shaped(view: ComputeView) -> dict:
    return arm.compute(view.row, view.nodes, view.workspace, view.runs_on)


@router.get(WS_PATH + "/computes")
def list_computes(ctx: Ctx, ws: Ws) -> dict:
    return {"value": [_shaped(v) for v in ctx.services.computes.listed(ws)], "nextLink": None}


@router.get(COMPUTE)
def get_compute(ctx: Ctx, ws: Ws, compute_name: str) -> dict:
    return _shaped(ctx.services.computes.get(ws, compute_name))


@router.put(COMPUTE)
def put_compute(ctx: Ctx, ws: Ws, compute_name: str, body: Annotated[dict[str, Any], Body()]) -> Response:
    view, op, created = ctx.services.computes.put(ws, compute_name, body)
    url = lro.status_url(ctx.settings, ws.subscription, view.row.location, op)
    return lro.accepted(_shaped(view), 201 if created else 200, url)


@router.patch(COMPUTE)
def patch_compute(ctx: Ctx, ws: Ws, compute_name: str, body: Annotated[dict[str, Any], Body()]) -> Response:
    view, op = ctx.services.computes.patch_scale(ws, compute_name, body)
    return lro.accepted(_shaped(view), 200, lro.status_url(ctx.settings, ws.subscription, view.row.location, op))


@router.delete(COMPUTE)
def delete_compute(ctx: Ctx, ws: Ws, compute_name: str, underlyingResourceAction: str = "Delete") -> Response:
    if underlyingResourceAction.lower() not in ("delete", "detach"):
        raise ValidationFailed("underlyingResourceAction must be Delete or Detach.",
                               target="underlyingResourceAction")
    row, op = ctx.services.computes.delete(ws, compute_name) or (None, None)
    return lro.started(ctx.settings, ws.subscription, row.location if row else "", op)


@router.post(COMPUTE + "/updateIdleShutdownSetting")
def update_idle_shutdown(ctx: Ctx, ws: Ws, compute_name: str, body: Annotated[dict[str, Any], Body()]) -> Response:
    ctx.services.computes.update_idle_shutdown(ws, compute_name, body)
    return Response(status_code=200)


@router.post(COMPUTE + "/listNodes")
def list_nodes(ctx: Ctx, ws: Ws, compute_name: str) -> dict:
    return {"nodes": [arm.node(n) for n in ctx.services.computes.nodes(ws, compute_name)], "nextLink": None}


def _instance_action(verb: str):
    def act(ctx: Ctx, ws: Ws, compute_name: str) -> Response:
        """start, stop, restart (compute instances): 202, and an operation that ends when the instance gets there."""
        row, op = ctx.services.computes.act(ws, compute_name, verb)
        return lro.accepted(None, 202, lro.status_url(ctx.settings, ws.subscription, row.location, op))
    return act


for _verb in ("Start", "Stop", "Restart"):
    router.add_api_route(f"{COMPUTE}/{_verb.lower()}", _instance_action(_verb), methods=["POST"],
                         name=f"{_verb.lower()}_compute_instance")
