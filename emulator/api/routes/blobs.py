"""The Blob REST API subset azure-storage-blob uses for uploads and downloads, path-style under /blob.

URLs are https://<host>:<port>/blob/<account>/<container>/<blob name>; every request carries the container
SAS minted by startPendingUpload. Errors render as storage XML (api/errors.py), not ARM JSON.
"""

import re
from typing import Annotated

from fastapi import APIRouter, Depends, Request
from fastapi.responses import Response, StreamingResponse
from starlette.concurrency import run_in_threadpool

from emulator.api import storage_xml
from emulator.api.deps import Ctx
from emulator.domain.storage import blob_access
from emulator.errors import BadRequest, Conflict
from emulator.services.blob_io import Staged, too_large
from emulator.services.blobs import CONTENT_HEADERS, BlobStore, md5_b64

router = APIRouter()
CONTAINER = "/blob/{account}/{container}"
BLOB = CONTAINER + "/{blob:path}"
_RANGE = re.compile(r"^bytes=(\d+)-(\d*)$")
_META_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,127}$")
MAX_LIST = 5000
# Azure's largest bodies (service version 2019-12-12 on): a Put Blob 5000 MiB, a block 4000 MiB.
MAX_PUT_BLOB, MAX_BLOCK = 5000 << 20, 4000 << 20
MAX_BLOCK_LIST = 8 << 20  # bytes of a Put Block List body: Azure's 50,000 block ids, with room to spare
MAX_RANGE_MD5 = 4 << 20  # Azure returns a range's Content-MD5 only for ranges of at most 4 MiB


def blob_store(ctx: Ctx) -> BlobStore:
    return BlobStore(ctx.settings.data_dir)


Blobs = Annotated[BlobStore, Depends(blob_store)]


def _authorize(ctx: Ctx, request: Request, account: str, container: str, needed: str, blob: str = "") -> None:
    blob_access.account_name(account)
    blob_access.container_name(container)
    blob_access.verify(ctx.secret, account, container, request.query_params, ctx.clock(), needed, blob)


def _headers(request: Request) -> dict[str, str]:
    return storage_xml.base_headers(request.headers.get("x-ms-version"))


def _metadata(request: Request) -> dict[str, str]:
    metadata = {}
    for key, value in request.headers.items():
        if key.startswith("x-ms-meta-"):
            name = key[len("x-ms-meta-"):]
            if not _META_KEY.fullmatch(name):
                raise BadRequest(f"Metadata name '{name}' must be a C# identifier.", target=key,
                                 code="InvalidMetadata")
            metadata[name] = value
    return metadata


def _content_headers(request: Request) -> dict[str, str]:
    given = {h: request.headers.get(f"x-ms-blob-{h.lower()}") for h in CONTENT_HEADERS}
    return {h: v for h, v in given.items() if v}


def _range(request: Request) -> tuple[int, int | None] | None:
    name = "x-ms-range" if "x-ms-range" in request.headers else "range"
    value = request.headers.get(name)
    if value is None:
        return None
    match = _RANGE.fullmatch(value.strip())
    if not match or (match[2] and int(match[2]) < int(match[1])):
        raise BadRequest(f"The range '{value}' must be 'bytes=<start>-[<end>]' with start <= end.", target=name,
                         code="InvalidRange")
    return int(match[1]), int(match[2]) if match[2] else None


# containers
@router.put(CONTAINER)
def create_container(ctx: Ctx, blobs: Blobs, request: Request, account: str, container: str) -> Response:
    _authorize(ctx, request, account, container, "c")
    _require(request, "restype", "container")
    if not blobs.create_container(account, container):
        raise Conflict("The specified container already exists.", target="container", code="ContainerAlreadyExists")
    return Response(status_code=201, headers=_headers(request))


@router.head(CONTAINER, operation_id="container_properties")
@router.get(CONTAINER, operation_id="container_get")
def container_get(ctx: Ctx, blobs: Blobs, request: Request, account: str, container: str) -> Response:
    listing = request.query_params.get("comp") == "list"
    _authorize(ctx, request, account, container, "l" if listing else "r")
    _require(request, "restype", "container")
    if listing:
        return _list(ctx, blobs, request, account, container)
    blobs.require_container(account, container)
    return Response(status_code=200, headers={**_headers(request), "x-ms-lease-status": "unlocked",
                                              "x-ms-lease-state": "available", "x-ms-has-immutability-policy":
                                              "false", "x-ms-has-legal-hold": "false"})


def _require(request: Request, name: str, value: str) -> None:
    if request.query_params.get(name) != value:
        raise BadRequest(f"This operation needs the query parameter {name}={value}.", target=name,
                         code="InvalidQueryParameterValue")


def _list(ctx: Ctx, blobs: Blobs, request: Request, account: str, container: str) -> Response:
    query = request.query_params
    prefix, marker, delimiter = query.get("prefix", ""), query.get("marker", ""), query.get("delimiter", "")
    size = _max_results(query.get("maxresults"))
    entries, prefixes = [], []
    for props in blobs.list_blobs(account, container, prefix):
        rest = props.name[len(prefix):]
        if delimiter and delimiter in rest:
            folder = prefix + rest.split(delimiter, 1)[0] + delimiter
            if not prefixes or prefixes[-1] != folder:
                prefixes.append(folder)
        else:
            entries.append(props)
    names = sorted([(b.name, b) for b in entries] + [(p, None) for p in prefixes], key=lambda e: e[0])
    names = [e for e in names if e[0] > marker] if marker else names
    page, more = names[:size], names[size:]
    body = storage_xml.blob_list(f"{ctx.settings.public_url}/blob/{account}/", container,
                                 [b for _, b in page if b is not None], [n for n, b in page if b is None],
                                 dict(query), page[-1][0] if more else None,
                                 "metadata" in query.get("include", "").split(","))
    return Response(body, media_type=storage_xml.XML_TYPE, headers=_headers(request))


def _max_results(value: str | None) -> int:
    if value is None:
        return MAX_LIST
    if not value.isdigit() or not 1 <= int(value) <= MAX_LIST:
        raise BadRequest(f"maxresults must be an integer from 1 to {MAX_LIST}.", target="maxresults",
                         code="OutOfRangeQueryParameterValue")
    return int(value)


# blobs
@router.head(BLOB)
def blob_properties(ctx: Ctx, blobs: Blobs, request: Request, account: str, container: str, blob: str) -> Response:
    _authorize(ctx, request, account, container, "r", blob)
    props = blobs.props(account, container, blob)
    return Response(status_code=200, headers={**_headers(request), **storage_xml.property_headers(props),
                                              "Content-Length": str(props.size)})


@router.get(BLOB)
def get_blob(ctx: Ctx, blobs: Blobs, request: Request, account: str, container: str, blob: str) -> Response:
    _authorize(ctx, request, account, container, "r", blob)
    want_md5 = request.headers.get("x-ms-range-get-content-md5", "").lower() == "true"
    reading = blobs.open(account, container, blob, _range(request))
    headers = {**_headers(request), **storage_xml.property_headers(reading.props),
               "Content-Length": str(reading.length)}
    if not reading.ranged:
        return StreamingResponse(reading.chunks(), status_code=200, headers=headers)
    headers.pop("Content-MD5", None)
    if reading.props.md5:
        headers["x-ms-blob-content-md5"] = reading.props.md5
    headers["Content-Range"] = f"bytes {reading.start}-{reading.end}/{reading.props.size}"
    if want_md5:
        if reading.length > MAX_RANGE_MD5:
            reading.handle.close()
            raise BadRequest(f"x-ms-range-get-content-md5 needs a range of at most {MAX_RANGE_MD5} bytes.",
                             target="x-ms-range-get-content-md5", code="InvalidHeaderValue")
        data = reading.read_all()
        return Response(data, status_code=206, headers={**headers, "Content-MD5": md5_b64(data)})
    return StreamingResponse(reading.chunks(), status_code=206, headers=headers)


@router.put(BLOB)
async def put_blob(ctx: Ctx, blobs: Blobs, request: Request, account: str, container: str, blob: str) -> Response:
    _authorize(ctx, request, account, container, "w", blob)
    comp = request.query_params.get("comp")
    content_md5 = request.headers.get("content-md5")
    if comp == "metadata":
        props = blobs.set_metadata(account, container, blob, _metadata(request), ctx.clock())
        return _written(request, props.etag, props.modified_at, 200)
    if comp == "block":
        block_id = request.query_params.get("blockid", "")
        blobs.check_block(account, container, blob, block_id)  # before reading a body it would refuse
        md5 = blobs.put_block(account, container, blob, block_id, await _receive(blobs, request, MAX_BLOCK),
                              content_md5)
        return Response(status_code=201, headers={**_headers(request), "Content-MD5": md5,
                                                  "x-ms-request-server-encrypted": "true"})
    options = {"if_none_match": request.headers.get("if-none-match"), "headers": _content_headers(request),
               "metadata": _metadata(request), "now": ctx.clock()}
    if comp == "blocklist":
        body = await _small_body(request, MAX_BLOCK_LIST)
        # Composing the blob copies every block: off the event loop.
        props = await run_in_threadpool(blobs.commit_blocks, account, container, blob,
                                        storage_xml.block_ids(body), **options)
        return _written(request, props.etag, props.modified_at, 201, md5_b64(body))
    if comp is not None:
        raise BadRequest(f"comp={comp} is not supported on blobs by amlemu.", target="comp",
                         code="InvalidQueryParameterValue")
    _require_block_blob(request)
    blobs.check_put(account, container, blob, options["if_none_match"])
    staged = await _receive(blobs, request, MAX_PUT_BLOB)
    props = blobs.put(account, container, blob, staged, content_md5=content_md5, **options)
    return _written(request, props.etag, props.modified_at, 201, staged.md5)


def _check_length(request: Request, limit: int) -> None:
    """Refuse a body announced too large before reading any of it."""
    length = request.headers.get("content-length", "")
    if length.isdigit() and int(length) > limit:
        raise too_large(limit, "Content-Length")


async def _receive(blobs: BlobStore, request: Request, limit: int) -> Staged:
    _check_length(request, limit)
    return await blobs.receive(request.stream(), limit)


async def _small_body(request: Request, limit: int) -> bytes:
    """A body that is never large (a block list), refused past `limit` bytes rather than held whatever its size."""
    _check_length(request, limit)
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > limit:
            raise too_large(limit, "body")
    return bytes(body)


def _require_block_blob(request: Request) -> None:
    kind = request.headers.get("x-ms-blob-type")
    if kind != "BlockBlob":
        raise BadRequest(f"x-ms-blob-type must be BlockBlob (amlemu stores block blobs only), got {kind!r}.",
                         target="x-ms-blob-type", code="InvalidHeaderValue")


def _written(request: Request, etag: str, modified, status: int, md5: str | None = None) -> Response:
    headers = {**_headers(request), "ETag": etag, "Last-Modified": storage_xml.http_date(modified),
               "x-ms-request-server-encrypted": "true"}
    if md5:
        headers["Content-MD5"] = md5
    return Response(status_code=status, headers=headers)


@router.delete(BLOB)
def delete_blob(ctx: Ctx, blobs: Blobs, request: Request, account: str, container: str, blob: str) -> Response:
    _authorize(ctx, request, account, container, "d", blob)
    blobs.delete(account, container, blob)
    return Response(status_code=202, headers=_headers(request))
