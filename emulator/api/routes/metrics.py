"""Prometheus' scrape of the platform: bearer-token protected like the management API (the compose profile's
Prometheus reads a token the controller keeps fresh, see controller/reconcilers/meter.py)."""

from fastapi import APIRouter, Depends
from fastapi.responses import Response

from emulator.api.deps import Ctx, authorized

router = APIRouter(dependencies=[Depends(authorized)])


@router.get("/metrics", include_in_schema=False)
def metrics(ctx: Ctx) -> Response:
    return Response(ctx.services.metrics.exposition(), media_type=ctx.services.metrics.content_type)
