"""Emulator-only controls, under /_emulator: preempt a node now, a cluster's preemption policy, a job's
history with its attempts. The ARM paths after the prefix name the resource as Azure would."""

from typing import Annotated, Any

from fastapi import APIRouter, Body, Depends
from fastapi.responses import JSONResponse

from emulator.api.deps import WS_PATH, Ctx, Ws, authorized
from emulator.domain import payload
from emulator.domain.compute import preemption as rules

router = APIRouter(dependencies=[Depends(authorized)])
COMPUTE = f"/_emulator{WS_PATH}/computes/{{compute_name}}"


@router.post(COMPUTE + "/preempt")
def preempt(ctx: Ctx, ws: Ws, compute_name: str, body: Annotated[dict[str, Any] | None, Body()] = None) -> JSONResponse:
    """Give a low-priority node (`nodeId`, else a running one, else any) a Preempt notice now."""
    node_id = payload.string((body or {}).get("nodeId"), "nodeId")
    node, notice = ctx.services.preemption.preempt(ws, compute_name, node_id)
    return JSONResponse({"nodeId": node.node_id, "eventId": notice.event_id,
                         "notBefore": rules.rfc1123(notice.not_before)}, status_code=202)


@router.get(COMPUTE + "/preemption")
def get_policy(ctx: Ctx, ws: Ws, compute_name: str) -> dict:
    return ctx.services.preemption.policy(ws, compute_name).to_row()


@router.put(COMPUTE + "/preemption")
def put_policy(ctx: Ctx, ws: Ws, compute_name: str, body: Annotated[Any, Body()]) -> dict:
    return ctx.services.preemption.set_policy(ws, compute_name, body).to_row()


@router.get(f"/_emulator{WS_PATH}/jobs/{{name}}/history")
def job_history(ctx: Ctx, ws: Ws, name: str) -> dict:
    """Every status change with its attempt and reason: the preemptions and the reruns they caused."""
    row = ctx.services.jobs.job(ws, name)
    return {"name": row.name, "status": row.status, "attempt": row.attempt, "history": row.history}
