"""The slice of Azure Resource Manager the SDK's workspace creation goes through: resource groups and
template deployments. Resource groups are implicit: every one exists."""

from typing import Annotated, Any

from fastapi import APIRouter, Body, Depends

from emulator.api.deps import Ctx, authorized
from emulator.domain import names
from emulator.domain.ids import WorkspaceRef

router = APIRouter(dependencies=[Depends(authorized)])
RG = "/subscriptions/{subscription_id}/resourceGroups/{resource_group}"


@router.get(RG)
def get_resource_group(ctx: Ctx, subscription_id: str, resource_group: str) -> dict:
    names.resource_group(resource_group)
    return {"id": f"/subscriptions/{subscription_id}/resourceGroups/{resource_group}", "name": resource_group,
            "type": "Microsoft.Resources/resourceGroups", "location": ctx.settings.location,
            "properties": {"provisioningState": "Succeeded"}}


@router.put(RG + "/providers/Microsoft.Resources/deployments/{deployment}")
def put_deployment(ctx: Ctx, subscription_id: str, resource_group: str, deployment: str,
                   body: Annotated[dict[str, Any], Body()]) -> dict:
    workspace = ctx.services.workspaces.from_template(subscription_id, resource_group, body)
    workspace_id = WorkspaceRef(subscription_id, resource_group, workspace.name).arm_id
    # Done at once: the poller then makes no further call and the SDK reads the workspace back.
    return {"id": f"{RG.format(subscription_id=subscription_id, resource_group=resource_group)}"
                  f"/providers/Microsoft.Resources/deployments/{deployment}",
            "name": deployment, "type": "Microsoft.Resources/deployments",
            "properties": {"provisioningState": "Succeeded", "duration": "PT1S", "mode": "Incremental",
                           "outputResources": [{"id": workspace_id}]}}


@router.get(RG + "/deployments/{deployment}/operations")
def list_deployment_operations(subscription_id: str, resource_group: str, deployment: str) -> dict:
    return {"value": [], "nextLink": None}
