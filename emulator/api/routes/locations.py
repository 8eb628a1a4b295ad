"""Subscription-level routes under a location: VM sizes, usages, operation status; and the emulator's core quotas and
capacity shortages."""

from typing import Annotated, Any

from fastapi import APIRouter, Body, Depends
from fastapi.responses import JSONResponse

from emulator.api.arm import locations as arm
from emulator.api.deps import LOCATION_PATH, Ctx, authorized
from emulator.domain.compute import vm_sizes

router = APIRouter(dependencies=[Depends(authorized)])


@router.get(LOCATION_PATH + "/vmSizes")
def list_vm_sizes(subscription_id: str, location: str) -> dict:
    return {"value": [size.to_arm() for size in vm_sizes.VM_SIZES]}


@router.get(LOCATION_PATH + "/usages")
def list_usages(ctx: Ctx, subscription_id: str, location: str) -> dict:
    return {"value": ctx.services.locations.usages(subscription_id, location), "nextLink": None}


@router.get(LOCATION_PATH + "/quotas")
def list_quotas(ctx: Ctx, subscription_id: str, location: str) -> dict:
    """Each workspace's vCPU limit per VM family in the region (Azure's Quotas_List)."""
    return {"value": ctx.services.locations.workspace_quotas(subscription_id, location), "nextLink": None}


@router.post(LOCATION_PATH + "/updateQuotas")
def update_quotas(ctx: Ctx, subscription_id: str, location: str, body: Annotated[Any, Body()] = None) -> dict:
    """{"value": [{"id": ".../workspaces/W/quotas/FAMILY", "limit": 8}]}: a workspace's cap, each with its status."""
    return {"value": ctx.services.locations.update_workspace_quotas(subscription_id, body), "nextLink": None}


@router.get(LOCATION_PATH + "/computeOperationsStatus/{operation_id}")
def operation_status(ctx: Ctx, subscription_id: str, location: str, operation_id: str) -> JSONResponse:
    op = ctx.services.locations.operation(operation_id)
    # The poller takes its delay from the latest response: without Retry-After it waits 30 s.
    headers = {"Retry-After": "1"} if op.status == "InProgress" else {}
    return JSONResponse(arm.operation(op, subscription_id, location), headers=headers)


@router.get("/_emulator/quotas")
def get_quotas(ctx: Ctx, workspace: str | None = None) -> dict:
    """The core quotas in force: every region's (no workspace), or a workspace's own caps over them."""
    return ctx.services.locations.quotas(workspace)


@router.put("/_emulator/quotas")
def put_quotas(ctx: Ctx, body: Annotated[Any, Body()] = None, workspace: str | None = None) -> dict:
    """{"families": {"standardDSv2Family": 48}, "totalDedicatedCores": 96, "lowPriorityCores": 200}, merged into
    what was set (null: back to the default); every region's quotas, or a workspace's caps when it is named."""
    return ctx.services.locations.set_quotas(workspace, body)


@router.get("/_emulator/capacity")
def get_capacity(ctx: Ctx) -> dict:
    """The capacity shortages in force and to come: those asked for, the settings', the seeded schedule's windows."""
    return ctx.services.locations.capacity()


@router.put("/_emulator/capacity")
def put_capacity(ctx: Ctx, body: Annotated[Any, Body()] = None) -> dict:
    """{"region"?, "family"?, "priority"?, "seconds"?}: no capacity from now for VMs of that family ("*": all) and
    priority (LowPriority unless Dedicated) in that region ("*": all), for `seconds` or until restored."""
    return ctx.services.locations.short(body)


@router.delete("/_emulator/capacity")
def restore_capacity(ctx: Ctx) -> dict:
    """Capacity returns: every shortage ends, and random shortages stop."""
    return ctx.services.locations.restore()


@router.put("/_emulator/capacity/schedule")
def put_capacity_schedule(ctx: Ctx, body: Annotated[Any, Body()] = None) -> dict:
    """{"every", "for"?, "seed"?, "region"?, "family"?, "priority"?}: random shortages on average every `every`
    seconds lasting `for` on average; the same seed replays the same windows. "every": null stops them."""
    return ctx.services.locations.set_capacity_schedule(body)
