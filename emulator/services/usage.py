"""Core usage per VM family, as `list_usage` reports it (quota enforcement comes later)."""

from collections import Counter

from emulator.domain.compute import cluster, vm_sizes
from emulator.domain.ids import location_id
from emulator.services import computes
from emulator.store.repositories import Repository

DEDICATED_FAMILY_LIMIT = 24
DEDICATED_TOTAL_LIMIT = 24
LOW_PRIORITY_LIMIT = 100


def _entry(subscription: str, location: str, name: str, label: str, current: int, limit: int) -> dict:
    return {"id": f"{location_id(subscription, location)}/usages/{name}", "amlWorkspaceLocation": location,
            "type": "Microsoft.MachineLearningServices/totalCores/usages", "unit": "Count",
            "currentValue": current, "limit": limit, "name": {"value": name, "localizedValue": label}}


def usages(repo: Repository, subscription: str, location: str) -> list[dict]:
    dedicated: Counter = Counter()
    low_priority = 0
    for row in repo.computes_of_type(subscription, "AmlCompute"):
        spec = computes.spec_of(row)
        cores = spec.vm_size.vcpus * cluster.current_count([cluster.NodeState(n.state) for n in repo.nodes(row.key)])
        if spec.low_priority:
            low_priority += cores
        else:
            dedicated[spec.vm_size.family] += cores
    # Cluster and instance quota is one; a stopped instance still holds its cores (Azure: stopping "doesn't
    # release quota").
    for row in repo.computes_of_type(subscription, "ComputeInstance"):
        size = computes.spec_of(row).vm_size
        dedicated[size.family] += size.vcpus
    entries = [_entry(subscription, location, "TotalDedicatedCores", "Total Cluster Dedicated Regional vCPUs",
                      sum(dedicated.values()), DEDICATED_TOTAL_LIMIT),
               _entry(subscription, location, "TotalLowPriorityCores", "Total Cluster LowPriority Regional vCPUs",
                      low_priority, LOW_PRIORITY_LIMIT)]
    for family in sorted({size.family for size in vm_sizes.VM_SIZES}):
        gpu = any(s.gpus for s in vm_sizes.VM_SIZES if s.family == family)
        entries.append(_entry(subscription, location, family, f"{family} Cluster Dedicated vCPUs",
                              dedicated[family], 0 if gpu else DEDICATED_FAMILY_LIMIT))
    return entries
