"""The Studio: read-only pages over what the store holds (workspaces, computes and their nodes, jobs, endpoints),
live over server-sent events (api/studio_pages.py). A page needs the session `amlemu studio` opens, or, for a job's
page, the signature its Web View link carries (services.Studio.endpoint); every route here is a GET but the CLI's
POST, which takes the management API's bearer token."""

from typing import Annotated
from urllib.parse import quote

from fastapi import APIRouter, Cookie, Depends, Query, Request
from fastapi.responses import RedirectResponse, Response

from emulator import tokens
from emulator.api.deps import WS_PATH, Ctx, Ws, authorized
from emulator.api.studio_pages import STUDIO_PREFIX, show
from emulator.errors import NotFound
from emulator.services.facade.studio import PAGE_LOG_LINES

router = APIRouter()
WS = STUDIO_PREFIX + WS_PATH


def _job_resource(path: str) -> str | None:
    """The job a page path is under (/studio/subscriptions/.../workspaces/w/jobs/<name>/...): what a link signs."""
    parts = path[len(STUDIO_PREFIX):].split("/")
    return "/".join(parts[:11]) if len(parts) >= 11 and parts[9] == "jobs" else None


def viewer(ctx: Ctx, request: Request, sig: str | None = None,
           session: Annotated[str | None, Cookie(alias=tokens.SESSION_COOKIE)] = None) -> None:
    ctx.services.studio_sessions.check(session, _job_resource(request.url.path), sig)


Viewer = Annotated[None, Depends(viewer)]


@router.post("/_emulator/studio/session", dependencies=[Depends(authorized)])
def login_link(ctx: Ctx, page: str = "/studio") -> dict:
    """`amlemu studio`: a one-time login link for the browser, good for two minutes."""
    return {"loginUrl": ctx.services.studio_sessions.login_url(page)}


@router.get(STUDIO_PREFIX + "/login")
def login(ctx: Ctx, ticket: str | None = None, next: str = STUDIO_PREFIX) -> Response:
    cookie = ctx.services.studio_sessions.open(ticket)
    local = next if next.startswith(STUDIO_PREFIX) and "//" not in next and "\\" not in next else STUDIO_PREFIX
    answer = RedirectResponse(local, status_code=303)
    answer.set_cookie(tokens.SESSION_COOKIE, cookie, max_age=tokens.SESSION_SECONDS, path=STUDIO_PREFIX,
                      secure=True, httponly=True, samesite="strict")
    return answer


@router.get(STUDIO_PREFIX)
def workspaces(ctx: Ctx, request: Request, _: Viewer) -> Response:
    return show(request, "workspaces.html", lambda: {"workspaces": ctx.services.studio.workspaces()})


@router.get(WS)
def workspace(ctx: Ctx, ws: Ws, request: Request, _: Viewer) -> Response:
    return show(request, "workspace.html", lambda: {"workspace": ctx.services.studio.workspace(ws)})


@router.get(WS + "/computes")
def computes(ctx: Ctx, ws: Ws, request: Request, _: Viewer) -> Response:
    return show(request, "computes.html",
                lambda: dict(zip(("workspace", "cards", "report"), ctx.services.studio.computes(ws), strict=True)))


@router.get(WS + "/computes/{name}")
def compute(ctx: Ctx, ws: Ws, name: str, request: Request, _: Viewer) -> Response:
    return show(request, "computes.html",
                lambda: dict(zip(("workspace", "cards", "report"), ctx.services.studio.computes(ws, name), strict=True),
                             single=name))


@router.get(WS + "/timeline")
def timeline(ctx: Ctx, ws: Ws, request: Request, _: Viewer, subject: str | None = None) -> Response:
    """Every platform event of the workspace (or of one compute or job), newest first, and what it cost."""
    return show(request, "timeline.html", lambda: {"view": ctx.services.studio.timeline(ws, subject)})


@router.get(WS + "/jobs")
def jobs(ctx: Ctx, ws: Ws, request: Request, _: Viewer, status: str | None = None, experiment: str | None = None,
         compute: str | None = None, tag: str | None = None) -> Response:
    chosen = {"status": status, "experiment": experiment, "compute": compute, "tag": tag}
    return show(request, "jobs.html", lambda: {"listed": ctx.services.studio.jobs(ws, chosen), "chosen": chosen})


@router.get(WS + "/jobs/{name}")
def job(ctx: Ctx, ws: Ws, name: str, request: Request, _: Viewer) -> Response:
    """The job's Web View: what services['Studio'].endpoint links to, signed (`sig`) for this job."""
    return show(request, "job.html", lambda: {"page": ctx.services.studio.job(ws, name), "log_lines": PAGE_LOG_LINES,
                                              "sig": request.query_params.get("sig")})


@router.get(WS + "/jobs/{name}/file")
def job_file(ctx: Ctx, ws: Ws, name: str, _: Viewer, path: Annotated[str, Query(min_length=1)],
             output: str = "") -> Response:
    """One of the job's files (its artifacts', or a named output's), as a download: never shown inline."""
    return Response(ctx.services.studio.job_file(ws, name, path, output), media_type="application/octet-stream",
                    headers={"Content-Disposition": attachment(path.rsplit("/", 1)[-1]),
                             "X-Content-Type-Options": "nosniff", "Cache-Control": "no-store"})


def attachment(filename: str) -> str:
    """A download's Content-Disposition for any file name (RFC 6266): a plain ASCII `filename` for old clients, with
    what a quoted string cannot hold safely (controls, quotes, backslashes, %, non-ASCII) as `_`, and the exact name
    UTF-8 percent-encoded in `filename*` (RFC 8187), which browsers prefer. Starlette's FileResponse sends one or the
    other and wants a file on disk; headers must stay Latin-1 without line breaks, or the server answers 500."""
    fallback = "".join(c if " " <= c <= "~" and c not in '"\\%' else "_" for c in filename)
    return f"attachment; filename=\"{fallback}\"; filename*=UTF-8''{quote(filename, safe='')}"


@router.get(WS + "/endpoints")
def endpoints(ctx: Ctx, ws: Ws, request: Request, _: Viewer) -> Response:
    return show(request, "endpoints.html",
                lambda: dict(zip(("workspace", "online", "batch"), ctx.services.studio.endpoints(ws), strict=True)))


@router.get(WS + "/onlineEndpoints/{name}")
def online_endpoint(ctx: Ctx, ws: Ws, name: str, request: Request, _: Viewer) -> Response:
    return show(request, "online_endpoint.html",
                lambda: dict(zip(("workspace", "card"), ctx.services.studio.online_endpoint(ws, name), strict=True)))


@router.get(WS + "/batchEndpoints/{name}")
def batch_endpoint(ctx: Ctx, ws: Ws, name: str, request: Request, _: Viewer) -> Response:
    return show(request, "batch_endpoint.html",
                lambda: dict(zip(("workspace", "card"), ctx.services.studio.batch_endpoint(ws, name), strict=True)))


@router.get(STUDIO_PREFIX + "/{rest:path}")
def unknown(rest: str, _: Viewer) -> Response:
    raise NotFound(f"The Studio has no page /studio/{rest}.")
