"""The RunHistory data plane `jobs.stream` and `jobs.download` read, and the discovery document that
points the SDK at it (the workspace's `discoveryUrl`)."""

from typing import Annotated, Any

from fastapi import APIRouter, Body, Depends

from emulator.api import arm_jobs
from emulator.api.deps import WS_PATH, Ctx, Ws, authorized
from emulator.domain import payload
from emulator.services import jobs

router = APIRouter()
HISTORY = f"/history/v1.0{WS_PATH}"
DISCOVERY_KEYS = ("api", "catalog", "experimentation", "gallery", "history", "hyperdrive", "labeling",
                  "modelmanagement", "pipelines", "studio")


@router.get("/discovery")
def discovery(ctx: Ctx) -> dict:
    """Unauthenticated, as in Azure: every data-plane service of the workspace is this emulator."""
    return {key: ctx.settings.public_url for key in DISCOVERY_KEYS}


@router.get(HISTORY + "/runs/{run_id}/details", dependencies=[Depends(authorized)])
def run_details(ctx: Ctx, ws: Ws, run_id: str) -> dict:
    with ctx.store.transaction() as repo:
        job = jobs.get(repo, ws, run_id)
    return arm_jobs.run_details(job, ws, ctx.settings, ctx.secret, ctx.clock())


@router.get(HISTORY + "/runs/{run_id}", dependencies=[Depends(authorized)])
def run(ctx: Ctx, ws: Ws, run_id: str) -> dict:
    with ctx.store.transaction() as repo:
        return arm_jobs.run(jobs.get(repo, ws, run_id))


@router.post(HISTORY + "/rundata", dependencies=[Depends(authorized)])
def run_data(ctx: Ctx, ws: Ws, body: Annotated[dict[str, Any], Body()]) -> dict:
    run_id = payload.string(body.get("runId"), "runId")
    with ctx.store.transaction() as repo:
        job = jobs.get(repo, ws, run_id or "")
        return {"runMetadata": arm_jobs.run(job), "runDefinition": None, "jobSpecification": None}
