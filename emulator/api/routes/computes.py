"""ARM computes of a workspace: CRUD with long-running operations, listNodes, and the compute-instance
actions (start, stop, restart, updateIdleShutdownSetting)."""

from typing import Annotated, Any

from fastapi import APIRouter, Body, Depends, Response

from emulator.api import lro
from emulator.api.arm import computes as arm
from emulator.api.deps import WS_PATH, Ctx, Ws, authorized
from emulator.errors import ValidationFailed
from emulator.services import computes, workspaces

router = APIRouter(dependencies=[Depends(authorized)])
COMPUTE = WS_PATH + "/computes/{compute_name}"


@router.get(WS_PATH + "/computes")
def list_computes(ctx: Ctx, ws: Ws) -> dict:
    with ctx.store.transaction() as repo:
        workspace = workspaces.get(repo, ws)
        rows = repo.computes(ws.key)
        return {"value": [arm.compute(r, repo.nodes(r.key), workspace) for r in rows], "nextLink": None}


@router.get(COMPUTE)
def get_compute(ctx: Ctx, ws: Ws, compute_name: str) -> dict:
    with ctx.store.transaction() as repo:
        workspace = workspaces.get(repo, ws)
        row = computes.get(repo, ws, compute_name)
        return arm.compute(row, repo.nodes(row.key), workspace)


@router.put(COMPUTE)
def put_compute(ctx: Ctx, ws: Ws, compute_name: str, body: Annotated[dict[str, Any], Body()]) -> Response:
    with ctx.store.transaction() as repo:
        workspace = workspaces.get(repo, ws)
        row, op, created = computes.put(repo, ws, workspace, compute_name, body, ctx.clock())
        content = arm.compute(row, repo.nodes(row.key), workspace)
    url = lro.status_url(ctx.settings, ws.subscription, row.location, op)
    return lro.accepted(content, 201 if created else 200, url)


@router.patch(COMPUTE)
def patch_compute(ctx: Ctx, ws: Ws, compute_name: str, body: Annotated[dict[str, Any], Body()]) -> Response:
    with ctx.store.transaction() as repo:
        workspace = workspaces.get(repo, ws)
        row, op = computes.patch_scale(repo, ws, workspace, compute_name, body, ctx.clock())
        content = arm.compute(row, repo.nodes(row.key), workspace)
    return lro.accepted(content, 200, lro.status_url(ctx.settings, ws.subscription, row.location, op))


@router.delete(COMPUTE)
def delete_compute(ctx: Ctx, ws: Ws, compute_name: str, underlyingResourceAction: str = "Delete") -> Response:
    if underlyingResourceAction.lower() not in ("delete", "detach"):
        raise ValidationFailed("underlyingResourceAction must be Delete or Detach.",
                               target="underlyingResourceAction")
    with ctx.store.transaction() as repo:
        workspaces.get(repo, ws)
        deleted = computes.delete(repo, ws, compute_name, ctx.clock())
    row, op = deleted or (None, None)
    return lro.started(ctx.settings, ws.subscription, row.location if row else "", op)


@router.post(COMPUTE + "/updateIdleShutdownSetting")
def update_idle_shutdown(ctx: Ctx, ws: Ws, compute_name: str, body: Annotated[dict[str, Any], Body()]) -> Response:
    with ctx.store.transaction() as repo:
        workspaces.get(repo, ws)
        computes.update_idle_shutdown(repo, ws, compute_name, body, ctx.clock())
    return Response(status_code=200)


@router.post(COMPUTE + "/listNodes")
def list_nodes(ctx: Ctx, ws: Ws, compute_name: str) -> dict:
    with ctx.store.transaction() as repo:
        workspaces.get(repo, ws)
        row = computes.get(repo, ws, compute_name)
        nodes = repo.nodes(row.key) if row.compute_type == "AmlCompute" else []  # an instance's agent is no node
        return {"nodes": [arm.node(n) for n in nodes], "nextLink": None}


def _instance_action(verb: str):
    def act(ctx: Ctx, ws: Ws, compute_name: str) -> Response:
        """start, stop, restart (compute instances): 202, and an operation that ends when the instance gets there."""
        with ctx.store.transaction() as repo:
            workspaces.get(repo, ws)
            row, op = computes.act(repo, ws, compute_name, verb, ctx.clock())
        return lro.accepted(None, 202, lro.status_url(ctx.settings, ws.subscription, row.location, op))
    return act


for _verb in ("Start", "Stop", "Restart"):
    router.add_api_route(f"{COMPUTE}/{_verb.lower()}", _instance_action(_verb), methods=["POST"],
                         name=f"{_verb.lower()}_compute_instance")
