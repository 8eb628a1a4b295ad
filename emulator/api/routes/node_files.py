"""A detached node's files (services/node_files.py): internal routes under /_emulator/nodes, for nodes only.
They take the node's own token (tokens.node_token), never a management token, and the rank by query:
`job` (its key), `attempt`, `rank`."""

from typing import Annotated

from anyio import to_thread
from fastapi import APIRouter, Header, Query, Request
from fastapi.responses import JSONResponse, Response, StreamingResponse
from pydantic import BaseModel, Field

from emulator import confined_tar
from emulator.api.deps import Ctx
from emulator.services import blob_io
from emulator.services.node_files import LOG_CHUNK_MAX

router = APIRouter(include_in_schema=False)
FILES = "/_emulator/nodes/{node_id}/files"
Job = Annotated[str, Query(min_length=1, max_length=1000)]
Number = Annotated[int, Query(ge=0)]
Authorization = Annotated[str | None, Header()]


@router.get(FILES)
def reads(ctx: Ctx, node_id: str, job: Job, attempt: Number, rank: Number, authorization: Authorization = None):
    """A tar of what the rank reads: its code snapshot, its inputs, the outputs an earlier attempt left."""
    scope = ctx.services.node_files.scope(node_id, authorization, job, attempt, rank)
    return StreamingResponse(ctx.services.node_files.reads(scope), media_type="application/x-tar")


@router.post(FILES + "/log")
async def append_log(ctx: Ctx, request: Request, node_id: str, job: Job, attempt: Number, rank: Number,
                     offset: Number, authorization: Authorization = None) -> JSONResponse:
    """The log's bytes from `offset` of the node's copy, appended to the job's log (ml_client.jobs.stream)."""
    files = ctx.services.node_files
    scope = await to_thread.run_sync(files.scope, node_id, authorization, job, attempt, rank)
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > LOG_CHUNK_MAX:
            raise blob_io.too_large(LOG_CHUNK_MAX, "body")
    held = await to_thread.run_sync(files.append_log, scope, job, attempt, rank, offset, bytes(body))
    return JSONResponse({"held": held})


@router.put(FILES)
async def writes(ctx: Ctx, request: Request, node_id: str, job: Job, attempt: Number, rank: Number,
                 authorization: Authorization = None) -> Response:
    """A tar of what the rank wrote (its outputs, logs, named outputs), unpacked into the workspace's storage."""
    files = ctx.services.node_files
    scope = await to_thread.run_sync(files.scope, node_id, authorization, job, attempt, rank)
    # the files within the attempt's bound, and a tar's headers and padding besides
    staged = await blob_io.receive(request.stream(), files.staging_path(),
                                   scope.max_bytes + 1024 * confined_tar.MAX_MEMBERS)
    written = await to_thread.run_sync(files.receive, scope, job, attempt, staged.path)
    return JSONResponse({"written": written})


class Removed(BaseModel):
    paths: list[Annotated[str, Field(min_length=1, max_length=4096)]] = Field(max_length=confined_tar.MAX_MEMBERS)


@router.post(FILES + "/removed")
def removed(ctx: Ctx, body: Removed, node_id: str, job: Job, attempt: Number, rank: Number,
            authorization: Authorization = None) -> JSONResponse:
    """What the rank removed from its outputs since it last sent them: removed from the workspace's storage too."""
    files = ctx.services.node_files
    scope = files.scope(node_id, authorization, job, attempt, rank)
    return JSONResponse({"removed": files.remove(scope, job, attempt, body.paths)})
