"""The one place errors become HTTP: ARM error bodies {"error": {"code", "message", "target"?}}."""

import logging

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from starlette.exceptions import HTTPException

from emulator.api import storage_xml, studio_pages
from emulator.domain import unserved
from emulator.errors import EmulatorError, NotFound, NotSupported

log = logging.getLogger("amlemu.api")
BLOB_PREFIX = "/blob/"


def arm_error(status: int, code: str, message: str, target: str | None = None,
              details: list[dict] | None = None) -> JSONResponse:
    error = {"code": code, "message": message}
    if target:
        error["target"] = target
    if details:
        error["details"] = details
    return JSONResponse({"error": error}, status_code=status)


def _field(loc: tuple) -> str:
    parts = [str(p) for p in loc if p not in ("body", "query", "path", "header")]
    return ".".join(parts) or "body"


def _is_storage(request: Request) -> bool:
    """Blob requests come from azure-storage-blob, which reads storage XML errors and x-ms-error-code."""
    return request.url.path.startswith(BLOB_PREFIX)


def _is_head(request: Request) -> bool:
    return request.method == "HEAD"


STUDIO_TITLES = {401: "Sign in to the Studio", 403: "Not allowed", 404: "Not found"}


def _studio(request: Request, status: int, message: str) -> Response:
    """A Studio page's error is a page (a browser shows it), not ARM JSON."""
    return studio_pages.error_page(request, status, STUDIO_TITLES.get(status, "Something went wrong"), message)


async def _emulator_error(request: Request, exc: EmulatorError) -> Response:
    if studio_pages.is_studio(request):
        return _studio(request, exc.status, exc.message)
    if _is_storage(request):
        target = f" ({exc.target})" if exc.target else ""
        return storage_xml.error(exc.status, exc.code, exc.message + target, _is_head(request))
    return arm_error(exc.status, exc.code, exc.message, exc.target)


async def _validation_error(request: Request, exc: RequestValidationError) -> Response:
    errors = exc.errors()
    if studio_pages.is_studio(request):
        return _studio(request, 404, "The Studio has no such page: " + "; ".join(
            f"{_field(tuple(e.get('loc', ())))}: {e['msg']}" for e in errors))
    if _is_storage(request):
        return storage_xml.error(400, "InvalidInput", "One of the request inputs is not valid.", _is_head(request))
    if errors and errors[0].get("type") == "json_invalid":
        return arm_error(400, "InvalidRequestContent", "The request content is not valid JSON.")
    details = [{"code": "InvalidRequestContent", "target": _field(tuple(e.get("loc", ()))), "message": e["msg"]}
               for e in errors]
    first = details[0] if details else {"target": "body", "message": "invalid request"}
    return arm_error(400, "InvalidRequestContent", f"Invalid value for '{first['target']}': {first['message']}.",
                     first["target"], details)


def _unserved(request: Request) -> Response | None:
    """An Azure ML operation no route serves: amlemu does not support it yet, said in plain words (a GET of one
    named resource stays Azure's 404 for a resource that does not exist)."""
    found = unserved.describe(request.method, request.url.path)
    if found is None:
        return None
    if found.missing_resource:
        return arm_error(404, NotFound.code, found.message)
    return arm_error(NotSupported.status, NotSupported.code, found.message)


async def _http_error(request: Request, exc: HTTPException) -> Response:
    if _is_storage(request):
        code = {404: "ResourceNotFound", 405: "UnsupportedHttpVerb"}.get(exc.status_code, "InvalidInput")
        return storage_xml.error(exc.status_code, code, f"'{request.method} {request.url.path}' is not served.",
                                 _is_head(request))
    if studio_pages.is_studio(request):
        return _studio(request, exc.status_code, f"The Studio has no page {request.url.path} ({exc.detail}).")
    if exc.status_code in (404, 405) and (answer := _unserved(request)) is not None:
        return answer
    if exc.status_code == 404:
        return arm_error(404, "NoRegisteredProviderFound",
                         f"amlemu serves no '{request.method} {request.url.path}': it is not an Azure Machine "
                         "Learning address.")
    if exc.status_code == 405:
        return arm_error(405, "MethodNotAllowed", f"'{request.method}' is not allowed on '{request.url.path}'.")
    return arm_error(exc.status_code, "BadRequest", str(exc.detail))


async def _unexpected(request: Request, exc: Exception) -> Response:
    """A bug: the stack goes to the log; the answer names no exception (it could carry a repr of the input)."""
    log.error("unhandled error on %s %s", request.method, request.url.path, exc_info=exc)
    message = "amlemu failed to handle the request; the api's log has the details."
    if _is_storage(request):
        return storage_xml.error(500, "InternalError", message, _is_head(request))
    if studio_pages.is_studio(request):
        return _studio(request, 500, message)
    return arm_error(500, "InternalServerError", message)


def install(app: FastAPI) -> None:
    app.add_exception_handler(EmulatorError, _emulator_error)
    app.add_exception_handler(RequestValidationError, _validation_error)
    app.add_exception_handler(HTTPException, _http_error)
    app.add_exception_handler(Exception, _unexpected)
