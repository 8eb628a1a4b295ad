"""The job's "Web View" (services.Studio.endpoint): a page on the emulator showing the job's status, attempts,
outputs and log. A browser sends no token, so the link is signed (tokens.link_signature) by the api that gave it."""

from pathlib import Path

import jinja2
from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse
from fastapi.templating import Jinja2Templates

from emulator import tokens
from emulator.api.deps import WS_PATH, Ctx, Ws
from emulator.domain.compute import serverless
from emulator.domain.jobs.status import JobStatus, is_terminal
from emulator.errors import Forbidden
from emulator.services.facade.jobs import PAGE_LOG_LINES

router = APIRouter()
pages = Jinja2Templates(env=jinja2.Environment(  # every value the page shows is escaped: a job's text is the user's
    loader=jinja2.FileSystemLoader(Path(__file__).resolve().parents[1] / "pages"), autoescape=True))


@router.get(f"/studio{WS_PATH}/jobs/{{name}}", response_class=HTMLResponse)
def job_page(ctx: Ctx, ws: Ws, name: str, request: Request, sig: str | None = None) -> HTMLResponse:
    if not tokens.link_signed(ctx.secret, f"{ws.arm_id}/jobs/{name}", sig):
        raise Forbidden("This link is not signed for this job: open it from the job's "
                                  "services['Studio'].endpoint (ml_client.jobs.get(name).studio_url).")
    page = ctx.services.jobs.page(ws, name)
    compute = page.row.compute_key.rsplit("/", 1)[-1]
    return pages.TemplateResponse(request, "job.html", {
        "job": page.row, "workspace": ws.name, "outputs": page.outputs, "log": page.log, "log_lines": PAGE_LOG_LINES,
        "compute": "serverless" if serverless.is_serverless(compute) else compute,
        "ended": is_terminal(JobStatus(page.row.status))})
