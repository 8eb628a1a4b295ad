"""How a Studio page is answered: the whole page for a browser's GET, or, for the page's own EventSource (the same URL
with `Accept: text/event-stream`), a stream of its live part, sent again whenever it changes.

Every page template extends pages/base.html and puts what changes in its `live` block; the stream renders that block
alone from a fresh read, so a page and its updates cannot disagree. Templates autoescape: what users named (jobs,
tags, logs, metric names) is text on the page, never markup."""

import asyncio
import json
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import jinja2
from fastapi import Request
from fastapi.responses import Response, StreamingResponse
from fastapi.templating import Jinja2Templates
from starlette.concurrency import run_in_threadpool

from emulator.api import studio_charts
from emulator.domain.ids import WorkspaceRef
from emulator.domain.jobs.status import JobStatus, is_terminal
from emulator.domain.serving import traffic
from emulator.errors import EmulatorError
from emulator.services.facade.studio import compute_name

LIVE_SECONDS = 1.0  # how often a page's stream reads again what it shows
KEEP_ALIVE_SECONDS = 15.0  # a comment line now and then, so proxies and the browser keep an idle stream open
STUDIO_PREFIX = "/studio"

pages = Jinja2Templates(env=jinja2.Environment(
    loader=jinja2.FileSystemLoader(Path(__file__).resolve().parent / "pages"), autoescape=True))
pages.env.globals.update(chart=studio_charts.chart, graph=studio_charts.graph, ended=lambda s: is_terminal(JobStatus(s)),
                         ws_path=lambda row: WorkspaceRef.of(row).arm_id, compute_of=compute_name,
                         traffic_window=f"{traffic.WINDOW_SECONDS:g}")

View = Callable[[], dict]


def wants_stream(request: Request) -> bool:
    return "text/event-stream" in request.headers.get("accept", "")


def show(request: Request, template: str, view: View) -> Response:
    """The page, or its live stream. `view` reads what the page shows (one service call): run once for the page,
    again on every tick of the stream."""
    if wants_stream(request):
        return StreamingResponse(_stream(request, template, view), media_type="text/event-stream",
                                 headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"})
    return pages.TemplateResponse(request, template, _values(request, view()),
                                  headers={"Cache-Control": "no-store"})


def _values(request: Request, values: dict) -> dict:
    return {"studio": STUDIO_PREFIX, "path": request.url.path, **values}


def _live_block(request: Request, template: str, values: dict) -> str:
    page = pages.env.get_template(template)
    return "".join(page.blocks["live"](page.new_context({"request": request, **_values(request, values)})))


async def _stream(request: Request, template: str, view: View) -> AsyncIterator[str]:
    last, quiet = None, 0.0
    yield f"retry: {int(LIVE_SECONDS * 2000)}\n\n"
    while not await request.is_disconnected():
        try:
            html = _live_block(request, template, await run_in_threadpool(view))
        except EmulatorError as exc:  # the thing shown went away (a deleted job): say so and stop
            yield _event("gone", {"status": exc.status, "message": exc.message})
            return
        if html != last:
            yield _event("live", {"html": html})
            last, quiet = html, 0.0
        elif quiet >= KEEP_ALIVE_SECONDS:
            yield ": keep-alive\n\n"
            quiet = 0.0
        await asyncio.sleep(LIVE_SECONDS)
        quiet += LIVE_SECONDS


def _event(kind: str, data: dict) -> str:
    return f"event: {kind}\ndata: {json.dumps(data)}\n\n"  # JSON keeps the data on one line, as SSE needs


def error_page(request: Request, status: int, title: str, message: str) -> Response:
    """The Studio's own answer to a missing page or a missing session (HTML, not ARM JSON)."""
    if wants_stream(request):
        return Response(status_code=status)  # EventSource gives up on an error status
    return pages.TemplateResponse(request, "error.html", _values(request, {"title": title, "message": message,
                                                                            "status": status}),
                                  status_code=status, headers={"Cache-Control": "no-store"})


def is_studio(request: Request) -> bool:
    path = request.url.path
    return path == STUDIO_PREFIX or path.startswith(STUDIO_PREFIX + "/")

