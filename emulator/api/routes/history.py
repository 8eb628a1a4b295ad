"""The RunHistory data plane `jobs.stream` and `jobs.download` read, and the discovery document that
points the SDK at it (the workspace's `discoveryUrl`)."""

from typing import Annotated, Any

from fastapi import APIRouter, Body, Depends

from emulator.api.arm import history as arm_jobs
from emulator.api.deps import WS_PATH, Ctx, Ws, authorized
from emulator.domain import payload
from emulator.errors import ValidationFailed
from emulator.services import jobs, workspaces

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
        job, workspace = jobs.get(repo, ws, run_id), workspaces.get(repo, ws)
    return arm_jobs.run_details(job, workspace, ctx.settings, ctx.secret, ctx.clock())


@router.get(HISTORY + "/runs/{run_id}", dependencies=[Depends(authorized)])
def run(ctx: Ctx, ws: Ws, run_id: str) -> dict:
    with ctx.store.transaction() as repo:
        return arm_jobs.run(jobs.get(repo, ws, run_id), workspaces.get(repo, ws))


@router.post(HISTORY + "/rundata", dependencies=[Depends(authorized)])
def run_data(ctx: Ctx, ws: Ws, body: Annotated[dict[str, Any], Body()]) -> dict:
    run_id = payload.string(body.get("runId"), "runId")
    with ctx.store.transaction() as repo:
        job = jobs.get(repo, ws, run_id or "")
        return {"runMetadata": arm_jobs.run(job, workspaces.get(repo, ws)), "runDefinition": None,
                "jobSpecification": None}


@router.post(f"/data/v1.0{WS_PATH}/dataversion/batchGetResolvedUris", dependencies=[Depends(authorized)])
def resolved_uris(ctx: Ctx, ws: Ws, body: Annotated[dict[str, Any], Body()]) -> dict:
    """The dataset data plane, for the output asset ids RunHistory hands out: where each output lives."""
    ids = body.get("values")
    if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids):
        raise ValidationFailed("values must be a list of data asset ids.", target="values")
    with ctx.store.transaction() as repo:
        workspaces.get(repo, ws)
        return {"values": {asset_id: found for asset_id in ids if (found := jobs.output_location(repo, ws, asset_id))}}
