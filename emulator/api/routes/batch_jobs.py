"""A batch endpoint's data plane: its scoring URI, where invocations are POSTed, and the jobs it made (what
`batch_endpoints.list_jobs` and `batch_deployments.list_jobs` read). Tokens for `https://ml.azure.com` only."""

from typing import Annotated, Any

from fastapi import APIRouter, Body, Depends, Header

from emulator.api.arm import batch_endpoints as arm
from emulator.api.deps import WS_PATH, Ctx, Ws, scoring_caller

router = APIRouter(dependencies=[Depends(scoring_caller)])
JOBS = WS_PATH + "/batchEndpoints/{endpoint_name}/jobs"
MFE = "/mferp/managementfrontend"  # where the SDK lists them: the discovery's api URL, then this prefix


@router.post(JOBS)
def invoke(ctx: Ctx, ws: Ws, endpoint_name: str, body: Annotated[dict[str, Any], Body()],
           deployment: Annotated[str | None, Header(alias="azureml-model-deployment")] = None) -> dict:
    job, workspace = ctx.services.batch_endpoints.invoke(ws, endpoint_name, deployment, body)
    return arm.job(job, workspace, ctx.settings, ctx.secret)


@router.get(JOBS)
@router.get(MFE + JOBS)
def list_jobs(ctx: Ctx, ws: Ws, endpoint_name: str) -> dict:
    rows, workspace = ctx.services.batch_endpoints.jobs(ws, endpoint_name)
    return {"value": [arm.job(j, workspace, ctx.settings, ctx.secret) for j in rows], "nextLink": None}


@router.get(MFE + WS_PATH + "/batchEndpoints/{endpoint_name}/deployments/{deployment_name}/jobs")
def list_deployment_jobs(ctx: Ctx, ws: Ws, endpoint_name: str, deployment_name: str) -> dict:
    rows, workspace = ctx.services.batch_endpoints.jobs(ws, endpoint_name, deployment_name)
    return {"value": [arm.job(j, workspace, ctx.settings, ctx.secret, deployment_level=True) for j in rows],
            "nextLink": None}
