"""Serverless compute: a job that names no compute runs on capacity the emulator manages for its workspace, as
Azure "creates, scales, and manages the compute for you". The capacity is a cluster the user never sees, one per
VM size and tier, scaling from zero. Pure.

Azure's defaults (learn.microsoft.com, "Model training on serverless compute"): one node, a CPU VM, dedicated;
`resources.instance_type` and `instance_count` choose otherwise, `queue_settings.job_tier` Spot for low priority.
"""

from dataclasses import dataclass

from emulator.domain.compute import vm_sizes
from emulator.errors import ValidationFailed

DEFAULT_INSTANCE_TYPE = "Standard_DS3_v2"  # Azure picks a CPU VM by quota and cost; this is the clusters' default too
# The REST names of JobTier; Spot runs on low-priority VMs (preempted like them), the others on dedicated ones.
JOB_TIERS = {"Null": "Dedicated", "Spot": "LowPriority", "Basic": "Dedicated", "Standard": "Dedicated",
             "Premium": "Dedicated"}
IDLE_BEFORE_SCALE_DOWN = "PT2M"
# Compute names never hold a '.' (names.compute_name), so no compute a user makes can be taken for one of these.
PREFIX = "serverless."


@dataclass(frozen=True)
class Capacity:
    vm_size: vm_sizes.VmSize
    priority: str  # Dedicated or LowPriority

    @property
    def cluster_name(self) -> str:
        return f"{PREFIX}{self.priority.lower()}.{self.vm_size.name.lower()}"


def is_serverless(compute_name: str) -> bool:
    return compute_name.startswith(PREFIX)


def job_tier(queue_settings: dict, target: str) -> str:
    """The job's tier (`target`: where its queueSettings are); checked wherever the job runs."""
    tier = queue_settings.get("jobTier")
    tier = "Null" if tier is None else tier
    if tier not in JOB_TIERS:
        raise ValidationFailed(f"{target}.queueSettings.jobTier must be one of {', '.join(JOB_TIERS)}, got {tier!r}.",
                               target=f"{target}.queueSettings.jobTier")
    return tier


def capacity(resources: dict, tier: str, target: str) -> Capacity:
    """What a serverless job runs on, from its `resources` and tier (`target`: where they are)."""
    name = resources.get("instanceType")
    name = DEFAULT_INSTANCE_TYPE if name is None else name
    size = vm_sizes.find(name) if isinstance(name, str) else None
    if size is None:
        raise ValidationFailed(f"Instance type {name!r} is not a VM size serverless compute offers. List the sizes "
                               "with ml_client.compute.list_sizes().", target=f"{target}.resources.instanceType")
    priority = JOB_TIERS[tier]
    if priority == "LowPriority" and not size.low_priority_capable:
        raise ValidationFailed(f"VM size {size.name} has no spot (low-priority) VMs: choose another instance type "
                               "or job_tier Standard.", target=f"{target}.queueSettings.jobTier")
    return Capacity(size, priority)


def max_nodes(capacity: Capacity, quota_cores: int, instance_count: int, target: str) -> int:
    """As many nodes as the quota for the VM family holds; a job that asks for more than that is refused, as Azure
    refuses it ("decrease the number of instances ... or request a quota increase")."""
    most = quota_cores // capacity.vm_size.vcpus
    if instance_count > most:
        raise ValidationFailed(f"The job asks for {instance_count} × {capacity.vm_size.name} "
                               f"({capacity.vm_size.vcpus} vCPUs each) but the quota for serverless "
                               f"{capacity.priority} VMs allows {quota_cores} vCPUs ({most} nodes): decrease "
                               "instance_count or choose a smaller instance_type.",
                               target=f"{target}.resources.instanceCount")
    return most


def cluster_body(capacity: Capacity, location: str, nodes: int) -> dict:
    """The hidden cluster, as if it had been PUT: scaling from zero up to `nodes`."""
    return {"location": location, "tags": {}, "identity": None,
            "properties": {"computeType": "AmlCompute", "description": "serverless compute (managed by amlemu)",
                           "disableLocalAuth": True,
                           "properties": {"vmSize": capacity.vm_size.name, "vmPriority": capacity.priority,
                                          "osType": "Linux",
                                          "scaleSettings": {"minNodeCount": 0, "maxNodeCount": nodes,
                                                            "nodeIdleTimeBeforeScaleDown": IDLE_BEFORE_SCALE_DOWN}}}}
