"""Core usage and limits per VM family, as `list_usage` reports them (services/quotas.py counts and limits them)."""

from emulator.domain.compute import quota, vm_sizes
from emulator.domain.ids import location_id
from emulator.services import quotas
from emulator.settings import Settings
from emulator.store.repositories import Repository


def _entry(subscription: str, location: str, name: str, label: str, current: int, limit: int) -> dict:
    return {"id": f"{location_id(subscription, location)}/usages/{name}", "amlWorkspaceLocation": location,
            "type": "Microsoft.MachineLearningServices/totalCores/usages", "unit": "Count",
            "currentValue": current, "limit": limit, "name": {"value": name, "localizedValue": label}}


def usages(repo: Repository, settings: Settings, subscription: str, location: str) -> list[dict]:
    used = quotas.regional_usage(repo, subscription, location)
    limits = quotas.regional_limits(repo, settings)
    entries = [_entry(subscription, location, quota.TOTAL_DEDICATED, "Total Cluster Dedicated Regional vCPUs",
                      used.total_dedicated, limits.total_dedicated),
               _entry(subscription, location, quota.TOTAL_LOW_PRIORITY, "Total Cluster LowPriority Regional vCPUs",
                      used.low_priority, limits.low_priority)]
    for family in sorted(quotas.FAMILIES):
        gpu = any(s.gpus for s in vm_sizes.VM_SIZES if s.family == family)
        entries.append(_entry(subscription, location, family, f"{family} Cluster Dedicated vCPUs",
                              used.dedicated.get(family, 0), limits.of_family(family, gpu)))
    return entries
