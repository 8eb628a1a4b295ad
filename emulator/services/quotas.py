"""Core quotas in force and what uses them: the settings' defaults, then the emulator-wide override, then a workspace's
own caps (set through /_emulator/quotas); how many nodes a cluster may add now; a compute refused at create, or
accepted with a warning, as Azure does. The rules are in domain/compute/quota.py."""

from collections import Counter
from datetime import datetime

from emulator.domain import events as kinds
from emulator.domain.compute import capacity, cluster, local, quota, vm_sizes
from emulator.domain.compute.cluster import NodeState
from emulator.domain.compute.quota import Binding, Limits, Usage
from emulator.errors import ValidationFailed
from emulator.services import computes, events
from emulator.settings import Settings
from emulator.store.repositories import Repository
from emulator.store.tables import Compute, Job, QuotaOverride

EVERYWHERE = "*"
HOLDING = cluster.ACTIVE | {NodeState.LEAVING}  # a leaving node's VM is still allocated until it is gone
FAMILIES = {size.family for size in vm_sizes.VM_SIZES}
KEPT_CODES = quota.QUOTA_CODES | {capacity.SHORT_CODE}  # entries a node's start leaves alone: their own pass sets them


def defaults(settings: Settings) -> Limits:
    return Limits(settings.quota_family_cores, settings.quota_gpu_family_cores, settings.quota_total_dedicated_cores,
                  settings.quota_low_priority_cores)


def _override(repo: Repository, scope: str) -> dict | None:
    row = repo.quota_override(scope)
    return row.limits if row else None


def regional_limits(repo: Repository, settings: Settings) -> Limits:
    return defaults(settings).overlay(_override(repo, EVERYWHERE))


def workspace_limits(repo: Repository, settings: Settings, workspace_key: str) -> Limits:
    """A workspace's own caps over the regional limits (both apply: its usage against these, the region's against
    the regional ones, so a cap above the region's changes nothing)."""
    return regional_limits(repo, settings).overlay(_override(repo, workspace_key))


def usage_of(repo: Repository, rows: list[Compute]) -> Usage:
    dedicated: Counter = Counter()
    low_priority = 0
    for row in rows:
        if local.unmetered(row.name) or row.compute_type == "VirtualMachine":  # the emulator's machine, attached
            continue  # compute: no Azure quota on any
        spec = computes.spec_of(row)
        if row.compute_type == "ComputeInstance":  # one node, running or stopped
            dedicated[spec.vm_size.family] += spec.vm_size.vcpus
            continue
        cores = spec.vm_size.vcpus * sum(NodeState(n.state) in HOLDING for n in repo.nodes(row.key))
        if spec.low_priority:
            low_priority += cores
        else:
            dedicated[spec.vm_size.family] += cores
    return Usage(dedicated, low_priority)


def _emulated(repo: Repository, subscription: str) -> list[Compute]:
    return [*repo.computes_of_type(subscription, "AmlCompute"), *repo.computes_of_type(subscription, "ComputeInstance")]


def same_region(a: str, b: str) -> bool:
    return a.lower().replace(" ", "") == b.lower().replace(" ", "")


def regional_usage(repo: Repository, subscription: str, location: str, without: str = "") -> Usage:
    return usage_of(repo, [c for c in _emulated(repo, subscription)
                           if same_region(c.location, location) and c.key != without])


def workspace_usage(repo: Repository, workspace_key: str, without: str = "") -> Usage:
    return usage_of(repo, [c for c in repo.computes(workspace_key)
                           if c.compute_type in computes.EMULATED_TYPES and c.key != without])


def room(repo: Repository, settings: Settings, compute: Compute, itself: bool = True) -> tuple[int, Binding, str]:
    """How many more nodes of the compute's size fit now, the quota that decides it, and whose quota it is
    (`itself`: counting what the compute holds already; not for one being created)."""
    without = "" if itself else compute.key
    spec = computes.spec_of(compute)
    subscription = compute.key.split("/")[2]
    low = spec.low_priority if compute.compute_type == "AmlCompute" else False
    regional = (*quota.room(regional_limits(repo, settings), regional_usage(repo, subscription, compute.location, without),
                            spec.vm_size, low), "subscription")
    own = (*quota.room(workspace_limits(repo, settings, compute.workspace_key),
                       workspace_usage(repo, compute.workspace_key, without), spec.vm_size, low), "workspace")
    return min(regional, own, key=lambda r: r[0])


def _most_nodes(repo: Repository, settings: Settings, compute: Compute, low: bool) -> tuple[int, Binding]:
    size = computes.spec_of(compute).vm_size
    return min(quota.most_nodes(regional_limits(repo, settings), size, low),
               quota.most_nodes(workspace_limits(repo, settings, compute.workspace_key), size, low),
               key=lambda r: r[0])


def never_fits(repo: Repository, settings: Settings, compute: Compute, nodes: int) -> str | None:
    """Azure's failure message for a job whose `nodes` alone are above the cluster's quota (it would wait forever);
    None when they fit once the quota is free, or on a compute that is not a cluster."""
    if compute.compute_type != "AmlCompute" or local.unmetered(compute.name):
        return None
    spec = computes.spec_of(compute)
    most, binding, scope = min((*quota.most_nodes(regional_limits(repo, settings), spec.vm_size, spec.low_priority),
                                "subscription"),
                               (*quota.most_nodes(workspace_limits(repo, settings, compute.workspace_key),
                                                  spec.vm_size, spec.low_priority), "workspace"),
                               key=lambda r: r[0])
    return quota.job_nodes_message(binding, spec.vm_size, nodes, scope) if nodes > most else None


def admit(repo: Repository, settings: Settings, compute: Compute, created: bool) -> None:
    """A compute just written: a new instance, or a new cluster's minNodeCount, beyond the quota is refused (nothing
    is kept: the caller's transaction rolls back); a cluster whose maxNodeCount alone is above it gets a warning."""
    spec = computes.spec_of(compute)
    target = "properties.properties.vmSize"
    if created and compute.compute_type == "ComputeInstance":
        fits, binding, scope = room(repo, settings, compute, itself=False)
        if fits < 1:
            raise ValidationFailed(quota.shortfall_message(binding, spec.vm_size, scope), target=target)
        return
    if compute.compute_type != "AmlCompute":
        return
    if created and spec.scale.min_nodes:
        fits, binding, scope = room(repo, settings, compute)
        if fits < spec.scale.min_nodes:
            raise ValidationFailed(quota.shortfall_message(binding, spec.vm_size, scope), code=quota.MIN_NODES_CODE,
                                   target="properties.properties.scaleSettings.minNodeCount")
    others = [e for e in compute.errors or [] if e.get("error", {}).get("code") == quota.WAIT_CODE]
    set_entries(compute, [*others, *_over_max(repo, settings, compute)])


def _over_max(repo: Repository, settings: Settings, compute: Compute) -> list[dict]:
    """The warning of a cluster whose maxNodeCount alone is above the quota (Azure accepts it and warns)."""
    spec = computes.spec_of(compute)
    most, binding = _most_nodes(repo, settings, compute, spec.low_priority)
    return [quota.over_max_warning(spec.scale.max_nodes, most, binding, spec.vm_size)] \
        if spec.scale.max_nodes > most else []


def set_entries(compute: Compute, entries: list[dict]) -> None:
    """The compute's quota entries in its `errors`, beside whatever else it says (a node that could not start)."""
    others = [e for e in compute.errors or [] if e.get("error", {}).get("code") not in quota.QUOTA_CODES]
    if (errors := [*others, *entries] or None) != compute.errors:  # unchanged: no write on every pass
        compute.errors = errors


def set_node_error(compute: Compute, error: dict | None) -> None:
    """What kept the latest node from starting (None once one starts), beside the quota and capacity entries."""
    kept = [e for e in compute.errors or [] if e.get("error", {}).get("code") in KEPT_CODES]
    compute.errors = [*([error] if error else []), *kept] or None


def waiting(compute: Compute) -> bool:
    return any(e.get("error", {}).get("code") == quota.WAIT_CODE for e in compute.errors or [])


def held_back(repo: Repository, settings: Settings, compute: Compute, held: int, now: datetime) -> None:
    """After a scale plan: a wait begins (its error on the compute and on the queued jobs, a `quota.wait` event,
    once), goes on, or ends (`quota.freed`)."""
    spec = computes.spec_of(compute)
    entries = _over_max(repo, settings, compute)  # the quota may have changed since the cluster was written
    was_waiting = waiting(compute)
    if held:
        _fits, binding, scope = room(repo, settings, compute)
        error = quota.wait_error(binding, spec.vm_size, scope)
        set_entries(compute, [error, *entries])
        if not was_waiting:
            compute.allocation_changed_at = now
            events.record(repo, compute.workspace_key, kinds.QUOTA_WAIT, compute.key, now, quota=binding.quota,
                          scope=scope, limit=binding.limit, used=binding.used, heldBack=held,
                          message=error["error"]["message"])
        for job in repo.jobs_in(("Queued",), compute.key):
            warn(job, error["error"]["message"])
        return
    set_entries(compute, entries)
    if was_waiting:
        compute.allocation_changed_at = now
        events.record(repo, compute.workspace_key, kinds.QUOTA_FREED, compute.key, now)


def warn(job: Job, message: str) -> None:
    """The job's latest Queued entry carries the message of what holds it (quota, capacity) once: RunHistory shows it as the run's warning."""
    if job.dispatched_at is not None or not job.history or job.history[-1].get("warning"):
        return
    job.history = [*job.history[:-1], {**job.history[-1], "warning": message}]


def view(repo: Repository, settings: Settings, workspace_key: str | None) -> dict:
    """The limits in force (regional, or a workspace's) and what was set to make them so."""
    limits = workspace_limits(repo, settings, workspace_key) if workspace_key else regional_limits(repo, settings)
    return {"defaults": _limits_json(defaults(settings)), "override": _override(repo, workspace_key or EVERYWHERE),
            "limits": _limits_json(limits)}


def _limits_json(limits: Limits) -> dict:
    gpu = {s.family for s in vm_sizes.VM_SIZES if s.gpus}
    return {"totalDedicatedCores": limits.total_dedicated, "lowPriorityCores": limits.low_priority,
            "families": {f: limits.of_family(f, f in gpu) for f in sorted(FAMILIES)}}


def set_override(repo: Repository, workspace_key: str | None, body: object) -> None:
    scope = (workspace_key or EVERYWHERE).lower()
    row = repo.quota_override(scope)
    merged = quota.parse_override(body, row.limits if row else None, FAMILIES)
    if row is None:
        repo.add(QuotaOverride(scope=scope, limits=merged))
    else:
        row.limits = merged
