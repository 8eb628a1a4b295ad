"""The Execution Service's start of a local run: the client of a `compute="local"` job POSTs here the body its
`services.Local` endpoint carries (azure-ai-ml does, with its token), and gets the zip it unzips and invokes."""

from typing import Annotated, Any

from fastapi import APIRouter, Body, Depends, Response

from emulator.api.deps import WS_PATH, Ctx, Ws, execution_caller

router = APIRouter(dependencies=[Depends(execution_caller)])


@router.post(f"/execution/v1.0{WS_PATH}/experiments/{{experiment}}/localrun")
def start_local_run(ctx: Ctx, ws: Ws, experiment: str, body: Annotated[dict[str, Any], Body()]) -> Response:
    """`experiment`: the job's, as its endpoint names it; the body's RunId names the job."""
    return Response(ctx.services.jobs.start_local(ws, body), media_type="application/zip")
