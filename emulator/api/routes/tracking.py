"""The workspace's MLflow tracking URI: MLflow's REST API (and Azure's two preview routes) under
/mlflow/v1.0|v2.0/<workspace id>/, as the `azureml-mlflow` plugin calls it, from jobs and from users' machines."""

from typing import Annotated

from fastapi import APIRouter, Header, Request, Response
from starlette.concurrency import run_in_threadpool

from emulator.api.deps import WS_PATH, Ctx, Ws, authorized

router = APIRouter()


@router.api_route("/mlflow/{version}" + WS_PATH + "/api/{api_path:path}", methods=["GET", "POST", "PATCH", "DELETE"],
                  include_in_schema=False)
async def mlflow(ctx: Ctx, ws: Ws, request: Request, version: str, api_path: str,
                 authorization: Annotated[str | None, Header()] = None) -> Response:
    tracking = ctx.services.tracking
    if tracking.authorize(ws, authorization) is None:  # not a job of the workspace: what the token's role allows
        authorized(ctx, request, authorization)
    body = await request.body()
    answer = await run_in_threadpool(tracking.call, ws, request.method, f"/api/{api_path}",
                              list(request.query_params.multi_items()), body, request.url.netloc)
    return Response(answer.body, status_code=answer.status, media_type=answer.media_type)

