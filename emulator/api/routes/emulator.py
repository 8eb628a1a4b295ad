"""Emulator-only controls, under /_emulator: preempt a node now, a cluster's preemption policy, a job's
history with its attempts. The ARM paths after the prefix name the resource as Azure would."""

import uuid
from typing import Annotated, Any

from fastapi import APIRouter, Body, Depends
from fastapi.responses import JSONResponse

from emulator.api.deps import WS_PATH, Ctx, Ws, authorized
from emulator.domain import payload
from emulator.domain.compute import preemption as rules
from emulator.services import computes, jobs, preemption, workspaces

router = APIRouter(dependencies=[Depends(authorized)])
COMPUTE = f"/_emulator{WS_PATH}/computes/{{compute_name}}"


@router.post(COMPUTE + "/preempt")
def preempt(ctx: Ctx, ws: Ws, compute_name: str, body: Annotated[dict[str, Any] | None, Body()] = None) -> JSONResponse:
    """Give a low-priority node (`nodeId`, else a running one, else any) a Preempt notice now."""
    node_id = payload.string((body or {}).get("nodeId"), "nodeId")
    with ctx.store.transaction() as repo:
        workspaces.get(repo, ws)
        compute = computes.get(repo, ws, compute_name)
        node = preemption.preempt(compute, repo.nodes(compute.key), node_id, str(uuid.uuid4()), ctx.clock(),
                                  ctx.settings)
        notice = rules.Notice.from_row(node.notice)
    ctx.wake()
    return JSONResponse({"nodeId": node.node_id, "eventId": notice.event_id,
                         "notBefore": rules.rfc1123(notice.not_before)}, status_code=202)


@router.get(COMPUTE + "/preemption")
def get_policy(ctx: Ctx, ws: Ws, compute_name: str) -> dict:
    with ctx.store.transaction() as repo:
        workspaces.get(repo, ws)
        return preemption.policy_of(computes.get(repo, ws, compute_name), ctx.settings).to_row()


@router.put(COMPUTE + "/preemption")
def put_policy(ctx: Ctx, ws: Ws, compute_name: str, body: Annotated[Any, Body()]) -> dict:
    with ctx.store.transaction() as repo:
        workspaces.get(repo, ws)
        policy = preemption.set_policy(computes.get(repo, ws, compute_name), body, ctx.settings)
    ctx.wake()
    return policy.to_row()


@router.get(f"/_emulator{WS_PATH}/jobs/{{name}}/history")
def job_history(ctx: Ctx, ws: Ws, name: str) -> dict:
    """Every status change with its attempt and reason: the preemptions and the reruns they caused."""
    with ctx.store.transaction() as repo:
        row = jobs.get(repo, ws, name)
        return {"name": row.name, "status": row.status, "attempt": row.attempt, "history": row.history}
