"""ARM registries (Microsoft.MachineLearningServices/registries): create or update, get, list by resource group and
by subscription, delete. Provisioning ends within the request; the operation the poller follows is finished."""

from typing import Annotated, Any

from fastapi import APIRouter, Body, Depends, Response

from emulator.api import lro
from emulator.api.arm import registries as arm
from emulator.api.deps import Ctx, authorized
from emulator.domain.registries.ids import RegistryRef

router = APIRouter(dependencies=[Depends(authorized)])
PROVIDER_PATH = "/subscriptions/{subscription_id}/providers/Microsoft.MachineLearningServices/registries"
GROUP_PATH = ("/subscriptions/{subscription_id}/resourceGroups/{resource_group}"
              "/providers/Microsoft.MachineLearningServices/registries")
REGISTRY = GROUP_PATH + "/{registry_name}"


def registry_ref(subscription_id: str, resource_group: str, registry_name: str) -> RegistryRef:
    return RegistryRef(subscription_id, resource_group, registry_name)


Reg = Annotated[RegistryRef, Depends(registry_ref)]


@router.get(GROUP_PATH)
def list_in_group(ctx: Ctx, subscription_id: str, resource_group: str) -> dict:
    rows = ctx.services.registries.listed(subscription_id, resource_group)
    return {"value": [arm.registry(r, ctx.settings) for r in rows], "nextLink": None}


@router.get(PROVIDER_PATH)
def list_in_subscription(ctx: Ctx, subscription_id: str) -> dict:
    rows = ctx.services.registries.listed(subscription_id)
    return {"value": [arm.registry(r, ctx.settings) for r in rows], "nextLink": None}


@router.get(REGISTRY)
def get_registry(ctx: Ctx, reg: Reg) -> dict:
    return arm.registry(ctx.services.registries.get(reg), ctx.settings)


@router.put(REGISTRY)
def put_registry(ctx: Ctx, reg: Reg, body: Annotated[dict[str, Any], Body()]) -> Response:
    row, op, created = ctx.services.registries.put(reg, body)
    url = lro.status_url(ctx.settings, reg.subscription, row.location, op)
    return lro.accepted(arm.registry(row, ctx.settings), 201 if created else 200, url)


@router.delete(REGISTRY)
def delete_registry(ctx: Ctx, reg: Reg) -> Response:
    row, op = ctx.services.registries.delete(reg) or (None, None)
    return lro.started(ctx.settings, reg.subscription, row.location if row else "", op)
