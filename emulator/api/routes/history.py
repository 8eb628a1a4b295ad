"""The RunHistory data plane `jobs.stream` and `jobs.download` read, and the discovery document that
points the SDK at it (the workspace's `discoveryUrl`)."""

from typing import Annotated, Any

from fastapi import APIRouter, Body, Depends, Query

from emulator.api.arm import history as arm
from emulator.api.deps import WS_PATH, Ctx, Ws, authorized
from emulator.domain import payload
from emulator.errors import ValidationFailed

router = APIRouter()
HISTORY = f"/history/v1.0{WS_PATH}"
DISCOVERY_KEYS = ("api", "catalog", "experimentation", "gallery", "history", "hyperdrive", "labeling",
                  "modelmanagement", "pipelines", "studio")


@router.get("/discovery")
def discovery(ctx: Ctx) -> dict:
    """Unauthenticated, as in Azure: every data-plane service of the workspace is this emulator; its Studio is
    under /studio (Azure's is https://ml.azure.com)."""
    return {key: ctx.settings.public_url + ("/studio" if key == "studio" else "") for key in DISCOVERY_KEYS}


@router.get(HISTORY + "/runs/{run_id}/details", dependencies=[Depends(authorized)])
def run_details(ctx: Ctx, ws: Ws, run_id: str) -> dict:
    job, workspace = ctx.services.jobs.get(ws, run_id)
    return arm.run_details(job, workspace, ctx.settings, ctx.secret, ctx.clock())


@router.get(HISTORY + "/runs/{run_id}/children", dependencies=[Depends(authorized)])
def run_children(ctx: Ctx, ws: Ws, run_id: str, top: Annotated[int | None, Query(alias="$top", ge=1)] = None) -> dict:
    """`jobs.list(parent_job_name=...)`: a parent's children (a sweep's trials) in the order they were made."""
    rows, workspace = ctx.services.jobs.children(ws, run_id)
    return {"value": [arm.run(row, workspace) for row in rows[:top]], "continuationToken": None, "nextLink": None}


@router.get(HISTORY + "/runs/{run_id}", dependencies=[Depends(authorized)])
def run(ctx: Ctx, ws: Ws, run_id: str) -> dict:
    return arm.run(*ctx.services.jobs.get(ws, run_id))


@router.post(HISTORY + "/rundata", dependencies=[Depends(authorized)])
def run_data(ctx: Ctx, ws: Ws, body: Annotated[dict[str, Any], Body()]) -> dict:
    run_id = payload.string(body.get("runId"), "runId")
    return {"runMetadata": arm.run(*ctx.services.jobs.get(ws, run_id or "")), "runDefinition": None,
            "jobSpecification": None}


@router.post(f"/data/v1.0{WS_PATH}/dataversion/batchGetResolvedUris", dependencies=[Depends(authorized)])
def resolved_uris(ctx: Ctx, ws: Ws, body: Annotated[dict[str, Any], Body()]) -> dict:
    """The dataset data plane, for the output asset ids RunHistory hands out: where each output lives."""
    ids = body.get("values")
    if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids):
        raise ValidationFailed("values must be a list of data asset ids.", target="values")
    return {"values": ctx.services.jobs.output_locations(ws, ids)}
