"""ARM jobs: submit, read, list, cancel. Submitting is synchronous; the controller takes it from there."""

from typing import Annotated, Any

from fastapi import APIRouter, Body, Depends, Query, Response
from fastapi.responses import JSONResponse

from emulator.api.arm import jobs as arm
from emulator.api.deps import WS_PATH, Ctx, Ws, authorized
from emulator.domain.assets import versioned as rules
from emulator.domain.jobs.status import JobStatus

router = APIRouter(dependencies=[Depends(authorized)])
JOB = f"{WS_PATH}/jobs/{{name}}"


@router.put(JOB)
def put_job(ctx: Ctx, ws: Ws, name: str, body: Annotated[dict[str, Any], Body()]) -> JSONResponse:
    row, created, workspace = ctx.services.jobs.put(ws, name, body)
    return JSONResponse(arm.job(row, workspace, ctx.settings, ctx.secret), status_code=201 if created else 200)


@router.get(JOB)
def get_job(ctx: Ctx, ws: Ws, name: str) -> dict:
    return arm.job(*ctx.services.jobs.get(ws, name), ctx.settings, ctx.secret)


@router.get(f"{WS_PATH}/jobs")
def list_jobs(ctx: Ctx, ws: Ws, view: Annotated[str | None, Query(alias="listViewType")] = None,
              schedule: Annotated[str | None, Query(alias="scheduleId")] = None,
              scheduled: bool | None = None) -> dict:
    """`scheduleId` (jobs.list(scheduled_job_name=...)): the jobs that schedule made; `scheduled`: made by one."""
    query = rules.list_query(None, None, view)
    rows, workspace = ctx.services.jobs.listed(ws, query.view, schedule, scheduled)
    return {"value": [arm.job(j, workspace, ctx.settings, ctx.secret) for j in rows], "nextLink": None}


@router.post(JOB + "/cancel")
def cancel_job(ctx: Ctx, ws: Ws, name: str) -> Response:
    """200 when the job ended at once; 202 with a Location the SDK polls while its container stops."""
    if ctx.services.jobs.cancel(ws, name).status == JobStatus.CANCEL_REQUESTED:
        return _cancelling(ctx, ws, name)
    return Response(status_code=200)


@router.get(JOB + "/cancelStatus")
def cancel_status(ctx: Ctx, ws: Ws, name: str) -> Response:
    if ctx.services.jobs.job(ws, name).status == JobStatus.CANCEL_REQUESTED:
        return _cancelling(ctx, ws, name)
    return Response(status_code=200)


def _cancelling(ctx, ws, name: str) -> Response:
    location = f"{ctx.settings.public_url}{ws.arm_id}/jobs/{name}/cancelStatus?api-version=2023-04-01-preview"
    return Response(status_code=202, headers={"Location": location, "Retry-After": "1"})
