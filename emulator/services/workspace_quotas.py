"""Azure's workspace-level quota API: GET .../locations/{location}/quotas lists each workspace's vCPU limit per VM
family, POST .../updateQuotas caps families per workspace (the same caps /_emulator/quotas sets). Each update gets
its own status, as Azure answers: a family that does not exist, or a limit above the region's, is refused alone."""

from emulator.domain import payload
from emulator.domain.compute import vm_sizes
from emulator.errors import ValidationFailed
from emulator.services import quotas
from emulator.settings import Settings
from emulator.store.repositories import Repository

TYPE = "Microsoft.MachineLearningServices/workspaces/quotas"
GPU_FAMILIES = {s.family for s in vm_sizes.VM_SIZES if s.gpus}


def listed(repo: Repository, settings: Settings, subscription: str, location: str) -> list[dict]:
    entries = []
    for workspace in repo.workspaces(subscription):
        if not quotas.same_region(workspace.location, location):
            continue
        limits = quotas.workspace_limits(repo, settings, workspace.key)
        for family in sorted(quotas.FAMILIES):
            entries.append({"id": f"{_workspace_id(workspace)}/quotas/{family}", "amlWorkspaceLocation": location,
                            "type": TYPE, "name": {"value": family, "localizedValue": f"{family} Cluster Dedicated vCPUs"},
                            "limit": limits.of_family(family, family in GPU_FAMILIES), "unit": "Count"})
    return entries


def _workspace_id(workspace) -> str:
    return (f"/subscriptions/{workspace.subscription}/resourceGroups/{workspace.resource_group}/providers/"
            f"Microsoft.MachineLearningServices/workspaces/{workspace.name}")


def update(repo: Repository, settings: Settings, subscription: str, body: object) -> list[dict]:
    items = payload.obj(body, "body", required=True).get("value")
    if not isinstance(items, list):
        raise ValidationFailed("'value' must be a list of quotas to update.", target="value")
    results = []
    for i, item in enumerate(items):
        item = payload.obj(item, f"value[{i}]", required=True)
        quota_id, limit = item.get("id"), item.get("limit")
        if not isinstance(quota_id, str) or "/quotas/" not in quota_id:
            raise ValidationFailed(f"value[{i}].id must be a workspace quota's id (…/workspaces/W/quotas/FAMILY).",
                                   target=f"value[{i}].id")
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 0:
            raise ValidationFailed(f"value[{i}].limit must be a whole number of vCPUs, got {limit!r}.",
                                   target=f"value[{i}].limit")
        results.append({"id": quota_id, "type": TYPE, "limit": limit, "unit": "Count",
                        "status": _apply(repo, settings, subscription, quota_id, limit)})
    return results


def _apply(repo: Repository, settings: Settings, subscription: str, quota_id: str, limit: int) -> str:
    workspace_id, family = quota_id.rsplit("/quotas/", 1)
    workspace = repo.workspace(workspace_id)
    if workspace is None or workspace.subscription.lower() != subscription.lower() or family not in quotas.FAMILIES:
        return "InvalidVMFamilyName" if workspace is not None else "Failure"
    if limit > quotas.regional_limits(repo, settings).of_family(family, family in GPU_FAMILIES):
        return "InvalidQuotaExceedsSubscriptionLimit"
    quotas.set_override(repo, workspace.key, {"families": {family: limit}})
    return "Success"
