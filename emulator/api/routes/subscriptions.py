"""ARM's Subscriptions - List and Get: what `az login` and `az account` read. The emulator's subscriptions are the
default workspace's and those that hold a workspace created since."""

from fastapi import APIRouter, Depends

from emulator import tokens
from emulator.api.deps import Ctx, authorized
from emulator.errors import NotFound

router = APIRouter(dependencies=[Depends(authorized)])


def _subscription(subscription_id: str) -> dict:
    return {"id": f"/subscriptions/{subscription_id}", "authorizationSource": "RoleBased", "managedByTenants": [],
            "subscriptionId": subscription_id, "tenantId": tokens.TENANT_ID,
            "displayName": f"amlemu {subscription_id}", "state": "Enabled",
            "subscriptionPolicies": {"locationPlacementId": "Public_2014-09-01", "quotaId": "PayAsYouGo_2014-09-01",
                                     "spendingLimit": "Off"}}


@router.get("/subscriptions")
def list_subscriptions(ctx: Ctx) -> dict:
    held = ctx.services.workspaces.subscriptions()
    return {"value": [_subscription(s) for s in held], "count": {"type": "Total", "value": len(held)}}


@router.get("/subscriptions/{subscription_id}")
def get_subscription(ctx: Ctx, subscription_id: str) -> dict:
    held = {s.lower(): s for s in ctx.services.workspaces.subscriptions()}
    if subscription_id.lower() not in held:
        raise NotFound(f"The subscription '{subscription_id}' could not be found.", code="SubscriptionNotFound")
    return _subscription(held[subscription_id.lower()])
