"""RunHistory's artifact routes the azureml-mlflow plugin calls for a run's files (by experiment name or id: the
run alone says where its files are)."""

from typing import Annotated, Any

from fastapi import APIRouter, Body, Depends, Header, Request

from emulator.api.deps import WS_PATH, Ctx, Ws, authorized
from emulator.errors import NotFound, ValidationFailed


def _by_experiment(by: str, experiment: str) -> None:
    """The run alone says where its files are: the experiment, by name or id, is only checked for its form."""
    if by not in ("experiments", "experimentids"):
        raise NotFound(f"No RunHistory route '{by}': runs are under experiments/<name> or experimentids/<id>.")


router = APIRouter(dependencies=[Depends(_by_experiment)])
RUN = "/history/v1.0" + WS_PATH + "/{by}/{experiment}/runs/{run_id}/artifacts"
Auth = Annotated[str | None, Header()]


def _base_url(request: Request) -> str:
    """The address the caller reached: a job reaches the api by another name than the user's machine does."""
    return f"{request.url.scheme}://{request.url.netloc}"


def _authorize(ctx: Ctx, ws: Ws, request: Request, run_id: str, authorization: str | None, writing: bool) -> None:
    """A job of the workspace, or a management token whose role allows it in this workspace."""
    if ctx.services.run_artifacts.authorize(ws, run_id, authorization, writing=writing) is None:
        authorized(ctx, request, authorization)


@router.post(RUN + "/batch/metadata")
def create_empty_artifacts(ctx: Ctx, ws: Ws, request: Request, run_id: str, body: Annotated[dict[str, Any], Body()],
                           authorization: Auth = None) -> dict:
    _authorize(ctx, ws, request, run_id, authorization, writing=True)
    paths = body.get("paths")
    if not isinstance(paths, list) or not all(isinstance(p, dict) and isinstance(p.get("path"), str) for p in paths):
        raise ValidationFailed("paths must be a list of {\"path\": ...}.", target="paths")
    return ctx.services.run_artifacts.upload_urls(ws, run_id, [p["path"] for p in paths], _base_url(request))


@router.get(RUN + "/contentinfo")
def content_info(ctx: Ctx, ws: Ws, request: Request, run_id: str, path: str, authorization: Auth = None) -> dict:
    _authorize(ctx, ws, request, run_id, authorization, writing=False)
    return ctx.services.run_artifacts.content_info(ws, run_id, path, _base_url(request))


@router.get(RUN)
def list_in_container(ctx: Ctx, ws: Ws, request: Request, run_id: str, authorization: Auth = None) -> dict:
    _authorize(ctx, ws, request, run_id, authorization, writing=False)
    return ctx.services.run_artifacts.listing(ws, run_id)


@router.get(RUN + "/path")
def list_in_path(ctx: Ctx, ws: Ws, request: Request, run_id: str, path: str = "",
                 authorization: Auth = None) -> dict:
    _authorize(ctx, ws, request, run_id, authorization, writing=False)
    return ctx.services.run_artifacts.listing(ws, run_id, path)
