"""What routes get injected: the context built once in create_app (settings, secret, the services), the
caller's identity, the workspace."""

from dataclasses import dataclass
from datetime import datetime
from typing import Annotated, Callable

from fastapi import Depends, Header, Request

from emulator import tokens
from emulator.domain import roles
from emulator.domain.ids import WorkspaceRef
from emulator.errors import Forbidden
from emulator.services.facade import Services
from emulator.settings import Settings


@dataclass
class Context:
    settings: Settings
    secret: bytes
    services: Services
    clock: Callable[[], datetime]

    @property
    def store(self):
        """The store behind the services: for whoever owns the app (to close it) and tests (to seed it)."""
        return self.services.store


def context(request: Request) -> Context:
    return request.app.state.context


Ctx = Annotated[Context, Depends(context)]


WORKSPACE_READ = f"{roles.MLS}/workspaces/read"


def authorized(ctx: Ctx, request: Request, authorization: Annotated[str | None, Header()] = None) -> dict:
    """A valid management token whose role allows the request's ARM operation (Azure RBAC, domain/roles.py)."""
    claims = tokens.verify(ctx.secret, authorization, tokens.management_audiences(ctx.settings.own_urls))
    return _permitted(ctx, request, claims)


# azure-ai-ml 1.35 asks the token it sends the Execution Service for its ARM client's base URL before formatting,
# "{endpoint}" (ws_base_url + "/.default" in _job_operations.py): accepted there, beside management tokens.
EXECUTION_AUDIENCES = ("{endpoint}",)


def execution_caller(ctx: Ctx, request: Request, authorization: Annotated[str | None, Header()] = None) -> dict:
    """The Execution Service (a local run's start): as `authorized`, with the audience azure-ai-ml asks for it."""
    audiences = (*tokens.management_audiences(ctx.settings.own_urls), *EXECUTION_AUDIENCES)
    return _permitted(ctx, request, tokens.verify(ctx.secret, authorization, audiences))


def _permitted(ctx: Context, request: Request, claims: dict) -> dict:
    if claims.get(tokens.ROLE_CLAIM) is None:  # the emulated identity: Owner everywhere
        return claims
    # in a workspace's data plane (run history, tracking), what the token's role allows there, not elsewhere
    op = roles.operation(request.method, request.url.path) or roles.data_plane_operation(request.method,
                                                                                         request.url.path)
    if op is None:
        if request.method in ("GET", "HEAD"):
            return claims
        # The emulator's own settings (quotas, budgets, ...): a change to the whole emulator, Owner's or Contributor's
        # at the root only, never a Reader's nor a token scoped to one workspace.
        op = roles.Operation(f"{roles.MLS}/emulator/write", "/")
    grants = _grants(ctx, claims)
    if any(roles.permits(name, scope, op) for name, scope in grants):
        return claims
    listed_in = op.scope.lower().split("/providers/")[0]  # a list's scope: its subscription or resource group
    if op.action == WORKSPACE_READ and request.url.path.rstrip("/").lower().endswith("/workspaces") and any(
            roles.scope_covers(listed_in, scope) and roles.permits(name, scope, roles.Operation(op.action, scope))
            for name, scope in grants):
        return claims  # a list of workspaces above the caller's grants: as ARM, it lists those the caller may read
    raise Forbidden(roles.authorization_failed_message(claims.get("upn", ""), claims.get("oid", ""), op),
                    code="AuthorizationFailed")


Caller = Annotated[dict, Depends(authorized)]  # the same claims the router's own check read (cached per request)


def _grants(ctx: Context, claims: dict) -> list[tuple[str, str]]:
    """What its token says (`amlemu token`), and what role assignments have granted the principal since."""
    return [(str(claims[tokens.ROLE_CLAIM]), str(claims.get(tokens.SCOPE_CLAIM) or "/")),
            *ctx.services.role_assignments.grants(str(claims.get("oid", "")))]


def readable(ctx: Context, claims: dict, action: str) -> Callable[[str], bool]:
    """Whether the caller may perform `action` (a read) on a resource, by its ARM id: what a list shows."""
    if claims.get(tokens.ROLE_CLAIM) is None:
        return lambda _arm_id: True
    grants = _grants(ctx, claims)
    return lambda arm_id: any(roles.permits(name, scope, roles.Operation(action, arm_id)) for name, scope in grants)


def registry_caller(ctx: Ctx, authorization: Annotated[str | None, Header()] = None) -> dict:
    """Registries' discovery and data plane: management tokens, and Azure ML's data-plane ones."""
    return tokens.verify(ctx.secret, authorization, tokens.registry_audiences(ctx.settings.own_urls))


def scoring_caller(ctx: Ctx, authorization: Annotated[str | None, Header()] = None) -> dict:
    """Azure ML's data plane (a batch endpoint's scoring URI and its jobs): Microsoft Entra tokens for
    `https://ml.azure.com` only, as azure-ai-ml asks for them; a management token is refused."""
    return tokens.verify(ctx.secret, authorization, (tokens.SCORING_AUDIENCE,))


def workspace_ref(subscription_id: str, resource_group: str, workspace_name: str) -> WorkspaceRef:
    return WorkspaceRef(subscription_id, resource_group, workspace_name)


Ws = Annotated[WorkspaceRef, Depends(workspace_ref)]

WS_PATH = ("/subscriptions/{subscription_id}/resourceGroups/{resource_group}"
           "/providers/Microsoft.MachineLearningServices/workspaces/{workspace_name}")
LOCATION_PATH = "/subscriptions/{subscription_id}/providers/Microsoft.MachineLearningServices/locations/{location}"
