"""ARM batch endpoints and their deployments: CRUD with long-running operations (done by the time they are polled)."""

from typing import Annotated, Any

from fastapi import APIRouter, Body, Depends, Response

from emulator.api import lro
from emulator.api.arm import batch_endpoints as arm
from emulator.api.deps import WS_PATH, Ctx, Ws, authorized
from emulator.services.facade.batch_endpoints import DeploymentView

router = APIRouter(dependencies=[Depends(authorized)])
ENDPOINTS = WS_PATH + "/batchEndpoints"
ENDPOINT = ENDPOINTS + "/{endpoint_name}"
DEPLOYMENT = ENDPOINT + "/deployments/{deployment_name}"


@router.get(ENDPOINTS)
def list_endpoints(ctx: Ctx, ws: Ws) -> dict:
    rows, workspace = ctx.services.batch_endpoints.listed(ws)
    return {"value": [arm.endpoint(r, workspace, ctx.settings) for r in rows], "nextLink": None}


@router.get(ENDPOINT)
def get_endpoint(ctx: Ctx, ws: Ws, endpoint_name: str) -> dict:
    return arm.endpoint(*ctx.services.batch_endpoints.get(ws, endpoint_name), ctx.settings)


@router.put(ENDPOINT)
def put_endpoint(ctx: Ctx, ws: Ws, endpoint_name: str, body: Annotated[dict[str, Any], Body()]) -> Response:
    row, op, created, workspace = ctx.services.batch_endpoints.put(ws, endpoint_name, body)
    return lro.accepted(arm.endpoint(row, workspace, ctx.settings), 201 if created else 200,
                        lro.status_url(ctx.settings, ws.subscription, row.location, op))


@router.delete(ENDPOINT)
def delete_endpoint(ctx: Ctx, ws: Ws, endpoint_name: str) -> Response:
    row, op = ctx.services.batch_endpoints.delete(ws, endpoint_name) or (None, None)
    return lro.started(ctx.settings, ws.subscription, row.location if row else "", op)


def _shaped(view: DeploymentView) -> dict:
    return arm.deployment(view.row, view.endpoint, view.workspace)


@router.get(ENDPOINT + "/deployments")
def list_deployments(ctx: Ctx, ws: Ws, endpoint_name: str) -> dict:
    return {"value": [_shaped(v) for v in ctx.services.batch_deployments.listed(ws, endpoint_name)],
            "nextLink": None}


@router.get(DEPLOYMENT)
def get_deployment(ctx: Ctx, ws: Ws, endpoint_name: str, deployment_name: str) -> dict:
    return _shaped(ctx.services.batch_deployments.get(ws, endpoint_name, deployment_name))


@router.put(DEPLOYMENT)
def put_deployment(ctx: Ctx, ws: Ws, endpoint_name: str, deployment_name: str,
                   body: Annotated[dict[str, Any], Body()]) -> Response:
    view, op, created = ctx.services.batch_deployments.put(ws, endpoint_name, deployment_name, body)
    content = _shaped(view)
    return lro.accepted(content, 201 if created else 200, lro.status_url(ctx.settings, ws.subscription,
                                                                         content["location"], op))


@router.delete(DEPLOYMENT)
def delete_deployment(ctx: Ctx, ws: Ws, endpoint_name: str, deployment_name: str) -> Response:
    row, op = ctx.services.batch_deployments.delete(ws, endpoint_name, deployment_name) or (None, None)
    return lro.started(ctx.settings, ws.subscription, row.body["location"] if row else "", op)
