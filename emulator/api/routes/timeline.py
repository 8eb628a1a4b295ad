"""Emulator-only reads of the event timeline (a page after an id, or a live server-sent-events stream) and of the
cost meter, and a workspace's budget. `workspace`: a workspace's name or ARM id; none: every workspace."""

import asyncio
from typing import Annotated, Any

from fastapi import APIRouter, Body, Depends, Header, Query, Request
from fastapi.responses import StreamingResponse
from starlette.concurrency import run_in_threadpool

from emulator.api.arm import timeline as shape
from emulator.api.deps import Ctx, authorized

router = APIRouter(dependencies=[Depends(authorized)])
STREAM_POLL_SECONDS = 0.5  # the controller commits events in its own process: the stream reads the store this often
KEEPALIVE_SECONDS = 15.0  # a comment line, so proxies and clients keep an idle stream open


Kinds = Annotated[list[str] | None, Query()]


@router.get("/_emulator/events")
def events(ctx: Ctx, after: Annotated[int, Query(ge=0)] = 0, limit: Annotated[int, Query(ge=1, le=500)] = 500,
           workspace: str | None = None, kind: Kinds = None, subject: str | None = None, newest: bool = False) -> dict:
    """`kind` (repeated): only these kinds; `subject`: about one compute, job or deployment (an ARM id, or a compute's
    or job's name in `workspace`); `newest`: the last page, newest first (`limit=1`: where a stream is to start)."""
    return shape.events(ctx.services.timeline.events(workspace, after, limit, tuple(kind or ()), subject, newest))


# Not in the OpenAPI schema: a stream that follows never ends, which a schema-driven client (the fuzzer) would wait on.
@router.get("/_emulator/events/stream", include_in_schema=False)
async def stream(ctx: Ctx, request: Request, after: Annotated[int | None, Query(ge=0)] = None,
                 workspace: str | None = None, follow: bool = True, kind: Kinds = None, subject: str | None = None,
                 last_event_id: Annotated[str | None, Header()] = None) -> StreamingResponse:
    """Every event after `after` (or the Last-Event-ID a reconnecting client sends), then each new one as it comes
    (`follow=false`: the stream ends once it has caught up)."""
    start = int(last_event_id) if last_event_id and last_event_id.isdigit() else (after or 0)
    def read(after: int, limit: int) -> list:
        return ctx.services.timeline.events(workspace, after, limit, tuple(kind or ()), subject)
    await run_in_threadpool(read, start, 1)  # an unknown workspace: 404 now

    async def frames():
        last, idle = start, 0.0
        while not await request.is_disconnected():
            rows = await run_in_threadpool(read, last, 500)
            for row in rows:
                yield shape.sse(row)
            last = rows[-1].id if rows else last
            if not rows and not follow:
                return
            idle = 0.0 if rows else idle + STREAM_POLL_SECONDS
            if idle >= KEEPALIVE_SECONDS:
                idle = 0.0
                yield ": keepalive\n\n"
            if len(rows) < 500:
                await asyncio.sleep(STREAM_POLL_SECONDS)
    return StreamingResponse(frames(), media_type="text/event-stream",
                             headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"})


@router.get("/_emulator/cost")
def cost(ctx: Ctx, workspace: str | None = None, region: str | None = None) -> dict:
    return shape.cost(ctx.services.timeline.cost(workspace, region))


@router.put("/_emulator/budgets")
def put_budget(ctx: Ctx, body: Annotated[Any, Body()] = None, workspace: str | None = None) -> dict:
    """{"dollars": 10, "region": "eastus"} ({"dollars": null} removes it): a `budget.exceeded` event once the
    workspace's cost reaches it. `workspace`: the default one unless named."""
    workspace = workspace or ctx.settings.workspace
    return {"workspace": workspace, "budget": ctx.services.timeline.set_budget(workspace, body) or None}
