"""What routes get injected: the context built once in create_app, the caller's identity, the workspace."""

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Annotated, Callable

from fastapi import Depends, Header, Request

from emulator import tokens
from emulator.domain.ids import WorkspaceRef
from emulator.settings import Settings
from emulator.store.db import Store


@dataclass
class Context:
    settings: Settings
    store: Store
    secret: bytes
    clock: Callable[[], datetime] = lambda: datetime.now(UTC)
    wake: Callable[[], None] = lambda: None  # nudges the controller; best effort, the job is stored already


def context(request: Request) -> Context:
    return request.app.state.context


Ctx = Annotated[Context, Depends(context)]


def authorized(ctx: Ctx, authorization: Annotated[str | None, Header()] = None) -> dict:
    return tokens.verify(ctx.secret, authorization, tokens.management_audiences(ctx.settings.own_urls))


def workspace_ref(subscription_id: str, resource_group: str, workspace_name: str) -> WorkspaceRef:
    return WorkspaceRef(subscription_id, resource_group, workspace_name)


Ws = Annotated[WorkspaceRef, Depends(workspace_ref)]

WS_PATH = ("/subscriptions/{subscription_id}/resourceGroups/{resource_group}"
           "/providers/Microsoft.MachineLearningServices/workspaces/{workspace_name}")
LOCATION_PATH = "/subscriptions/{subscription_id}/providers/Microsoft.MachineLearningServices/locations/{location}"
