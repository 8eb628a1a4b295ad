"""Core quotas of Azure ML compute (semantics §1.5): per VM family and a regional total for dedicated nodes, one
low-priority quota across families; what a set of computes uses, how many more nodes of a size fit, and Azure's
messages when they do not. Pure: the store's rows are read by services/quotas.py.

What counts: the vCPUs of the VMs a compute holds now, i.e. a cluster's nodes from the moment they are asked for
until they are gone, and every compute instance, running or stopped (Azure: stopping "doesn't release quota").
Azure's cluster article also says that unprovisioned nodes of a cluster scaled to zero "contribute to your quota
usage" until it is deleted, yet it accepts a cluster whose maxNodeCount alone exceeds the quota (with a warning)
and `list_usage` reports the cores of allocated nodes; counting maxNodeCount would make such a cluster unusable.
So a cluster's idle capacity does not count here: its quota frees when its nodes leave.
"""

from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from emulator.domain.compute.vm_sizes import VmSize
from emulator.errors import ValidationFailed

TOTAL_DEDICATED = "TotalDedicatedCores"
TOTAL_LOW_PRIORITY = "TotalLowPriorityCores"
HELP_URL = "https://docs.microsoft.com/azure/machine-learning/how-to-manage-quotas#request-quota-increases"
WAIT_CODE = "QuotaExceeded"  # a compute `errors` entry: a scale-up held back (the jobs stay Queued)
OVER_MAX_CODE = "ClusterMaxNodesExceedCoreQuota"  # a warning entry: maxNodeCount alone is above the quota
MIN_NODES_CODE = "ClusterMinNodesExceedCoreQuota"  # Azure's code when minNodeCount cannot be met
JOB_NODES_CODE = "JobNodeCountExceedsCoreQuota"  # Azure's code when a job's nodes alone are above the quota
QUOTA_CODES = frozenset({WAIT_CODE, OVER_MAX_CODE})


@dataclass(frozen=True)
class Limits:
    """vCPU limits: `family` for every CPU family, `gpu_family` for GPU ones, `families` for those set by name."""
    family: int = 24
    gpu_family: int = 0
    total_dedicated: int = 24
    low_priority: int = 100
    families: Mapping[str, int] = field(default_factory=dict)

    def of_family(self, name: str, gpu: bool) -> int:
        return self.families.get(name, self.gpu_family if gpu else self.family)

    def overlay(self, override: Mapping | None) -> "Limits":
        """These limits with a stored override (see parse_override) applied."""
        if not override:
            return self
        return replace(self, total_dedicated=override.get("totalDedicatedCores", self.total_dedicated),
                       low_priority=override.get("lowPriorityCores", self.low_priority),
                       families={**self.families, **override.get("families", {})})


@dataclass(frozen=True)
class Usage:
    dedicated: Mapping[str, int]  # family -> vCPUs
    low_priority: int

    @property
    def total_dedicated(self) -> int:
        return sum(self.dedicated.values())


@dataclass(frozen=True)
class Binding:
    """The quota that limits a size's growth: its name, what Azure calls it in a message, limit and use."""
    quota: str
    label: str
    limit: int
    used: int


def family_label(family: str) -> str:
    """standardDSv2Family -> Standard DSv2 family (as Azure's quota messages name it)."""
    core = family.removeprefix("standard").removeprefix("Standard ").removesuffix("Family").strip()
    return f"Standard {core} family"


def bindings(limits: Limits, usage: Usage, size: VmSize, low_priority: bool) -> list[Binding]:
    if low_priority:
        return [Binding(TOTAL_LOW_PRIORITY, "low priority", limits.low_priority, usage.low_priority)]
    return [Binding(size.family, family_label(size.family), limits.of_family(size.family, size.gpus > 0),
                    usage.dedicated.get(size.family, 0)),
            Binding(TOTAL_DEDICATED, "total", limits.total_dedicated, usage.total_dedicated)]


def room(limits: Limits, usage: Usage, size: VmSize, low_priority: bool) -> tuple[int, Binding]:
    """How many more nodes of `size` fit, and the quota that decides it (the tightest)."""
    fits = [(max(0, (b.limit - b.used) // size.vcpus), b) for b in bindings(limits, usage, size, low_priority)]
    return min(fits, key=lambda pair: pair[0])


def most_nodes(limits: Limits, size: VmSize, low_priority: bool) -> tuple[int, Binding]:
    """How many nodes of `size` the quota allows at all (nothing else in use)."""
    return room(limits, Usage({}, 0), size, low_priority)


def shortfall_message(binding: Binding, size: VmSize, scope: str = "subscription") -> str:
    """Azure's wording when a node of `size` does not fit (as it fails a compute's create, or holds a resize)."""
    return (f"The specified {scope} has a {binding.label} vCPU quota of {binding.limit} ({binding.used} in use) and "
            f"cannot accomodate for at least 1 requested managed compute nodes which maps to {size.vcpus} vCPUs. "
            f"Talk to your Subscription Admin or refer to {HELP_URL} to increase the {binding.label} vCPU quota.")


def job_nodes_message(binding: Binding, size: VmSize, nodes: int, scope: str = "subscription") -> str:
    """Azure's failure of a job that could never run: its node count alone is above the quota (the wording as a
    run reported it, github.com/MicrosoftLearning/mslearn-dp100/issues/35)."""
    return (f"Job submission to AzureML Compute encountered an Exception with status code {JOB_NODES_CODE}, The "
            f"specified {scope} has a {binding.label} vCPU quota of {binding.limit} and is less than the requested "
            f"job node count of {nodes} which maps to {nodes * size.vcpus} vCPUs. Talk to your Subscription Admin or "
            f"refer to {HELP_URL} to increase the {binding.label} vCPU quota.")


def wait_error(binding: Binding, size: VmSize, scope: str) -> dict:
    return {"error": {"code": WAIT_CODE, "message": "Cluster scale-up is held back by quota: queued jobs wait until "
                                                    "it frees. " + shortfall_message(binding, size, scope)}}


def over_max_warning(max_nodes: int, fits: int, binding: Binding, size: VmSize) -> dict:
    return {"error": {"code": OVER_MAX_CODE, "message": (
        f"Warning: maxNodeCount {max_nodes} maps to {max_nodes * size.vcpus} vCPUs, above the {binding.label} vCPU "
        f"quota of {binding.limit}. The cluster is created, but it can only grow to {fits} node{'' if fits == 1 else 's'} of {size.name} "
        f"while the quota stays as it is. Refer to {HELP_URL} to increase it.")}}


OVERRIDE_KEYS = ("totalDedicatedCores", "lowPriorityCores", "families")


def _cores(value: object, target: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValidationFailed(f"'{target}' must be a whole number of vCPUs (0 or more), or null to remove it; "
                               f"got {value!r}.", target=target)
    return value


def parse_override(body: object, current: Mapping | None, known_families: set[str]) -> dict:
    """A PUT's body merged into the stored override: {"totalDedicatedCores"?, "lowPriorityCores"?, "families"?:
    {family: vCPUs}}; null removes a value (back to the default)."""
    if not isinstance(body, dict) or not body:
        raise ValidationFailed("The quota needs one of " + ", ".join(OVERRIDE_KEYS) + ".", target="body")
    unknown = sorted(set(body) - set(OVERRIDE_KEYS))
    if unknown:
        raise ValidationFailed(f"Unknown quota '{unknown[0]}'; expected {', '.join(OVERRIDE_KEYS)}.",
                               target=unknown[0])
    merged = {k: v for k, v in (current or {}).items() if k != "families"}
    families = dict((current or {}).get("families", {}))
    for key in ("totalDedicatedCores", "lowPriorityCores"):
        if key in body:
            merged[key] = _cores(body[key], key)
    given = body.get("families", {})
    if not isinstance(given, dict):
        raise ValidationFailed("'families' must map VM family names (e.g. standardDSv2Family) to vCPUs.",
                               target="families")
    for name, value in given.items():
        if name not in known_families:
            raise ValidationFailed(f"Unknown VM family '{name}'; ml_client.compute.list_sizes() names each size's "
                                   "family.", target=f"families.{name}")
        families[name] = _cores(value, f"families.{name}")
    merged["families"] = {k: v for k, v in families.items() if v is not None}
    return {k: v for k, v in merged.items() if v is not None and v != {}}
