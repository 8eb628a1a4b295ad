"""ARM's Subscriptions - List and Get: what `az login` and `az account` read. The emulator's subscriptions are the
default workspace's and those that hold a workspace created since; as ARM's, a caller sees those it may read
something in."""

from fastapi import APIRouter, Depends

from emulator import tokens
from emulator.api.deps import WORKSPACE_READ, Caller, Ctx, authorized, readable
from emulator.errors import NotFound

router = APIRouter(dependencies=[Depends(authorized)])


def _subscription(subscription_id: str) -> dict:
    return {"id": f"/subscriptions/{subscription_id}", "authorizationSource": "RoleBased", "managedByTenants": [],
            "subscriptionId": subscription_id, "tenantId": tokens.TENANT_ID,
            "displayName": f"amlemu {subscription_id}", "state": "Enabled",
            "subscriptionPolicies": {"locationPlacementId": "Public_2014-09-01", "quotaId": "PayAsYouGo_2014-09-01",
                                     "spendingLimit": "Off"}}


def _held(ctx: Ctx, caller: dict) -> list[str]:
    """The subscriptions holding a workspace the caller may read (a token scoped to one workspace sees its own)."""
    may_read = readable(ctx, caller, WORKSPACE_READ)
    return [s for s in ctx.services.workspaces.subscriptions()
            if any(may_read(w.key) for w in ctx.services.workspaces.listed(s))]


@router.get("/subscriptions")
def list_subscriptions(ctx: Ctx, caller: Caller) -> dict:
    held = _held(ctx, caller)
    return {"value": [_subscription(s) for s in held], "count": {"type": "Total", "value": len(held)}}


@router.get("/subscriptions/{subscription_id}")
def get_subscription(ctx: Ctx, caller: Caller, subscription_id: str) -> dict:
    held = {s.lower(): s for s in _held(ctx, caller)}
    if subscription_id.lower() not in held:
        raise NotFound(f"The subscription '{subscription_id}' could not be found.", code="SubscriptionNotFound")
    return _subscription(held[subscription_id.lower()])
