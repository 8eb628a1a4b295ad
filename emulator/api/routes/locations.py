"""Subscription-level routes under a location: VM sizes, usages, operation status."""

from fastapi import APIRouter, Depends
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


@router.get(LOCATION_PATH + "/computeOperationsStatus/{operation_id}")
def operation_status(ctx: Ctx, subscription_id: str, location: str, operation_id: str) -> JSONResponse:
    op = ctx.services.locations.operation(operation_id)
    # The poller takes its delay from the latest response: without Retry-After it waits 30 s.
    headers = {"Retry-After": "1"} if op.status == "InProgress" else {}
    return JSONResponse(arm.operation(op, subscription_id, location), headers=headers)
