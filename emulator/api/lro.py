"""ARM long-running-operation headers: Azure-AsyncOperation with Retry-After 1 (never 0: the SDK reads 0 as absent)."""

from fastapi import Response
from fastapi.responses import JSONResponse

from emulator.domain.ids import location_id
from emulator.services.rows import Operation
from emulator.settings import Settings


def status_url(settings: Settings, subscription: str, location: str, op: Operation) -> str:
    return (f"{settings.public_url}{location_id(subscription, location)}/computeOperationsStatus/{op.id}"
            "?api-version=2023-08-01-preview")


def accepted(content: dict | None, status: int, url: str, location_header: bool = False) -> Response:
    headers = {"Azure-AsyncOperation": url, "Retry-After": "1"}
    if location_header:
        headers["Location"] = url
    if content is None:
        return Response(status_code=status, headers=headers)
    return JSONResponse(content, status_code=status, headers=headers)


def started(settings: Settings, subscription: str, location: str, op: Operation | None) -> Response:
    """An action's answer without a body: 202 with the operation to poll, or 204 when nothing was started (a
    DELETE of what is not there)."""
    if op is None:
        return Response(status_code=204)
    return accepted(None, 202, status_url(settings, subscription, location, op), location_header=True)
