"""The one place errors become HTTP: ARM error bodies {"error": {"code", "message", "target"?}}."""

import logging

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException

from emulator.errors import EmulatorError

log = logging.getLogger("amlemu.api")


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


async def _emulator_error(_request: Request, exc: EmulatorError) -> JSONResponse:
    return arm_error(exc.status, exc.code, exc.message, exc.target)


async def _validation_error(_request: Request, exc: RequestValidationError) -> JSONResponse:
    errors = exc.errors()
    if errors and errors[0].get("type") == "json_invalid":
        return arm_error(400, "InvalidRequestContent", "The request content is not valid JSON.")
    details = [{"code": "InvalidRequestContent", "target": _field(tuple(e.get("loc", ()))), "message": e["msg"]}
               for e in errors]
    first = details[0] if details else {"target": "body", "message": "invalid request"}
    return arm_error(400, "InvalidRequestContent", f"Invalid value for '{first['target']}': {first['message']}.",
                     first["target"], details)


async def _http_error(request: Request, exc: HTTPException) -> JSONResponse:
    if exc.status_code == 404:
        return arm_error(404, "NoRegisteredProviderFound",
                         f"No route for '{request.method} {request.url.path}' in the amlemu control plane.")
    if exc.status_code == 405:
        return arm_error(405, "MethodNotAllowed", f"'{request.method}' is not allowed on '{request.url.path}'.")
    return arm_error(exc.status_code, "BadRequest", str(exc.detail))


async def _unexpected(request: Request, exc: Exception) -> JSONResponse:
    log.exception("unhandled error on %s %s", request.method, request.url.path)
    return arm_error(500, "InternalServerError", f"amlemu failed to handle the request: {exc!r}")


def install(app: FastAPI) -> None:
    app.add_exception_handler(EmulatorError, _emulator_error)
    app.add_exception_handler(RequestValidationError, _validation_error)
    app.add_exception_handler(HTTPException, _http_error)
    app.add_exception_handler(Exception, _unexpected)
