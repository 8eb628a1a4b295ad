"""ARM online endpoints and their deployments: CRUD with long-running operations, keys, tokens and logs."""

from typing import Annotated, Any

from fastapi import APIRouter, Body, Depends, Response

from emulator.api import lro
from emulator.api.arm import online_endpoints as arm_endpoints
from emulator.api.deps import WS_PATH, Ctx, Ws, authorized
from emulator.store.changes import mark_changed
from emulator.services import endpoints, workspaces

router = APIRouter(dependencies=[Depends(authorized)])
ENDPOINTS = WS_PATH + "/onlineEndpoints"
ENDPOINT = ENDPOINTS + "/{endpoint_name}"
DEPLOYMENT = ENDPOINT + "/deployments/{deployment_name}"
OptionalBody = Annotated[dict[str, Any] | None, Body()]


@router.get(ENDPOINTS)
def list_endpoints(ctx: Ctx, ws: Ws) -> dict:
    with ctx.store.transaction() as repo:
        workspace = workspaces.get(repo, ws)
        return {"value": [arm_endpoints.endpoint(r, workspace, ctx.settings) for r in repo.online_endpoints(ws.key)],
                "nextLink": None}


@router.get(ENDPOINT)
def get_endpoint(ctx: Ctx, ws: Ws, endpoint_name: str) -> dict:
    with ctx.store.transaction() as repo:
        workspace = workspaces.get(repo, ws)
        return arm_endpoints.endpoint(endpoints.get_endpoint(repo, ws, endpoint_name), workspace, ctx.settings)


@router.put(ENDPOINT)
def put_endpoint(ctx: Ctx, ws: Ws, endpoint_name: str, body: Annotated[dict[str, Any], Body()]) -> Response:
    with ctx.store.transaction() as repo:
        workspace = workspaces.get(repo, ws)
        row, op, created = endpoints.put_endpoint(repo, ws, workspace, endpoint_name, body, ctx.clock())
        content = arm_endpoints.endpoint(row, workspace, ctx.settings)
    mark_changed(ctx.settings.routes_changed)
    return lro.accepted(content, 201 if created else 200, lro.status_url(ctx.settings, ws.subscription,
                                                                         row.location, op))


@router.delete(ENDPOINT)
def delete_endpoint(ctx: Ctx, ws: Ws, endpoint_name: str) -> Response:
    with ctx.store.transaction() as repo:
        workspaces.get(repo, ws)
        deleted = endpoints.delete_endpoint(repo, ws, endpoint_name, ctx.clock())
    row, op = deleted or (None, None)
    ctx.wake()
    mark_changed(ctx.settings.routes_changed)
    return lro.started(ctx.settings, ws.subscription, row.location if row else "", op)


@router.post(ENDPOINT + "/listKeys")
def list_keys(ctx: Ctx, ws: Ws, endpoint_name: str) -> dict:
    with ctx.store.transaction() as repo:
        workspaces.get(repo, ws)
        return endpoints.keys(repo, ws, endpoint_name)


@router.post(ENDPOINT + "/regenerateKeys")
def regenerate_keys(ctx: Ctx, ws: Ws, endpoint_name: str, body: Annotated[dict[str, Any], Body()]) -> Response:
    with ctx.store.transaction() as repo:
        workspaces.get(repo, ws)
        row, op = endpoints.regenerate_key(repo, ws, endpoint_name, body, ctx.clock())
    mark_changed(ctx.settings.routes_changed)
    return lro.started(ctx.settings, ws.subscription, row.location, op)


@router.post(ENDPOINT + "/token")
def get_token(ctx: Ctx, ws: Ws, endpoint_name: str) -> dict:
    with ctx.store.transaction() as repo:
        workspaces.get(repo, ws)
        return endpoints.token(repo, ws, endpoint_name, ctx.secret, ctx.clock())


@router.get(ENDPOINT + "/deployments")
def list_deployments(ctx: Ctx, ws: Ws, endpoint_name: str) -> dict:
    with ctx.store.transaction() as repo:
        workspace = workspaces.get(repo, ws)
        parent = endpoints.get_endpoint(repo, ws, endpoint_name)
        return {"value": [arm_endpoints.deployment(r, parent, workspace) for r in repo.online_deployments(parent.key)],
                "nextLink": None}


@router.get(DEPLOYMENT)
def get_deployment(ctx: Ctx, ws: Ws, endpoint_name: str, deployment_name: str) -> dict:
    with ctx.store.transaction() as repo:
        workspace = workspaces.get(repo, ws)
        row = endpoints.get_deployment(repo, ws, endpoint_name, deployment_name)
        return arm_endpoints.deployment(row, endpoints.get_endpoint(repo, ws, endpoint_name), workspace)


@router.put(DEPLOYMENT)
def put_deployment(ctx: Ctx, ws: Ws, endpoint_name: str, deployment_name: str,
                   body: Annotated[dict[str, Any], Body()]) -> Response:
    with ctx.store.transaction() as repo:
        workspace = workspaces.get(repo, ws)
        row, op, created = endpoints.put_deployment(repo, ctx.settings, ws, endpoint_name, deployment_name, body,
                                                    ctx.clock())
        content = arm_endpoints.deployment(row, endpoints.get_endpoint(repo, ws, endpoint_name), workspace)
    ctx.wake()
    mark_changed(ctx.settings.routes_changed)
    return lro.accepted(content, 201 if created else 200, lro.status_url(ctx.settings, ws.subscription,
                                                                         content["location"], op))


@router.delete(DEPLOYMENT)
def delete_deployment(ctx: Ctx, ws: Ws, endpoint_name: str, deployment_name: str) -> Response:
    with ctx.store.transaction() as repo:
        workspaces.get(repo, ws)
        deleted = endpoints.delete_deployment(repo, ws, endpoint_name, deployment_name, ctx.clock())
    row, op = deleted or (None, None)
    ctx.wake()
    mark_changed(ctx.settings.routes_changed)
    return lro.started(ctx.settings, ws.subscription, row.body["location"] if row else "", op)


@router.post(DEPLOYMENT + "/getLogs")
def get_logs(ctx: Ctx, ws: Ws, endpoint_name: str, deployment_name: str, body: OptionalBody = None) -> dict:
    with ctx.store.transaction() as repo:
        workspaces.get(repo, ws)
        row = endpoints.get_deployment(repo, ws, endpoint_name, deployment_name)
        parent = endpoints.get_endpoint(repo, ws, endpoint_name)
    return endpoints.logs(ctx.settings, row, parent, body)
