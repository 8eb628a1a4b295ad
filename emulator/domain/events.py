"""The platform's event timeline: the kinds of event, each recorded once where the change it tells of is committed
(services/events.py records them), and what a node's events say of its life (for the cost meter)."""

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

# nodes of a cluster (subject: the compute's key; data: node, and more)
NODE_ADDED = "node.added"  # asked for: preparing (data: vmSize, priority; billed from here, as Azure bills a VM)
NODE_UP = "node.up"  # ready: idle, takes jobs
NODE_LEAVING = "node.leaving"  # scale-down: told to go
NODE_NOTICE = "node.notice"  # a Scheduled Events Preempt notice (data: eventId, notBefore)
NODE_PREEMPTED = "node.preempted"  # taken by a preemption (data: job, the job it ran)
NODE_UNUSABLE = "node.unusable"  # died, or could not start
NODE_GONE = "node.gone"  # no longer in the cluster
CLUSTER_SCALED = "cluster.scaled"  # the target node count changed (data: previous, target)
QUOTA_WAIT = "quota.wait"  # a scale-up held back by core quota, once per wait (data: quota, limit, used, heldBack)
QUOTA_FREED = "quota.freed"  # that wait ended: the cluster can grow again (data: quota)
# nodes Azure had no capacity for, once per wait (data: region, family, priority, until, heldBack, message)
CAPACITY_SHORT = "capacity.short"
CAPACITY_RESTORED = "capacity.restored"  # that wait ended: capacity returned, or the cluster needs no more nodes
# jobs (subject: the job's key)
JOB_STATUS = "job.status"  # data: status, previous, attempt, message
JOB_ATTEMPT = "job.attempt"  # an attempt's rank claimed by a node (data: attempt, rank, node)
JOB_REQUEUED = "job.requeued"  # back to the queue as its next attempt (data: attempt, reason, preempted)
IMAGE_BUILT = "image.built"  # a job's environment image was built for it (data: image)
# compute instances (subject: the instance's key): its VM is billed from started to stopped, as Azure bills a
# compute instance while it runs and not while it is stopped
INSTANCE_STARTED = "instance.started"  # created, started or restarted from a state with no VM (data: vmSize, state)
INSTANCE_STOPPED = "instance.stopped"  # stopped, deleted, or failed to come up (data: state)
# online deployments (subject: the deployment's key)
DEPLOYMENT_INSTANCES = "deployment.instances"  # its instances changed (data: instances, ready, instanceType)
DEPLOYMENT_ROLLED = "deployment.rolled"  # every instance of its generation ready (data: generation, capacity)
# workspaces (subject: the workspace's key)
BUDGET_EXCEEDED = "budget.exceeded"  # data: dollars (the budget), spent, region

NODE_ENDS = frozenset({NODE_PREEMPTED, NODE_UNUSABLE, NODE_GONE})  # a node's VM is gone: billing stops


@dataclass(frozen=True)
class Happened:
    """An event as the pure rules read it."""
    time: datetime
    kind: str
    subject: str
    data: dict


@dataclass(frozen=True)
class Lifetime:
    """A node's VM from when it was asked for to when it went (None: still there)."""
    compute: str
    node: str
    vm_size: str
    priority: str
    start: datetime
    end: datetime | None


def node_lifetimes(events: Iterable[Happened], alive: set[str]) -> list[Lifetime]:
    """Each node's lifetime from its events, oldest first. A node with no end event that is not `alive` any more
    (its end was not recorded: a deleted cluster) ends at its last event."""
    started: dict[str, Lifetime] = {}
    last: dict[str, datetime] = {}
    done: list[Lifetime] = []
    for event in sorted(events, key=lambda e: e.time):
        node = event.data.get("node")
        if not node or not event.kind.startswith("node."):
            continue
        last[node] = event.time
        if event.kind == NODE_ADDED and node not in started:
            started[node] = Lifetime(event.subject, node, event.data.get("vmSize", ""),
                                     event.data.get("priority", "Dedicated"), event.time, None)
        elif event.kind in NODE_ENDS and node in started:
            begun = started.pop(node)
            done.append(Lifetime(begun.compute, node, begun.vm_size, begun.priority, begun.start, event.time))
    for node, begun in started.items():
        end = None if node in alive else last[node]
        done.append(Lifetime(begun.compute, node, begun.vm_size, begun.priority, begun.start, end))
    return sorted(done, key=lambda life: life.start)


def instance_lifetimes(events: Iterable[Happened], existing: set[str]) -> list[Lifetime]:
    """Each compute instance's running spells, oldest first. One with no stop that no longer exists (its stop was
    not recorded: its workspace went) ends at its last event."""
    started: dict[str, Lifetime] = {}
    last: dict[str, datetime] = {}
    done: list[Lifetime] = []
    for event in sorted((e for e in events if e.kind.startswith("instance.")), key=lambda e: e.time):
        key = event.subject
        last[key] = event.time
        if event.kind == INSTANCE_STARTED and key not in started:
            started[key] = Lifetime(key, key, event.data.get("vmSize", ""), "Dedicated", event.time, None)
        elif event.kind == INSTANCE_STOPPED and key in started:
            begun = started.pop(key)
            done.append(Lifetime(key, key, begun.vm_size, begun.priority, begun.start, event.time))
    for key, begun in started.items():
        end = None if key in existing else last[key]
        done.append(Lifetime(key, key, begun.vm_size, begun.priority, begun.start, end))
    return sorted(done, key=lambda life: life.start)


def instance_counts(events: Iterable[Happened]) -> dict[str, list[tuple[datetime, int, str]]]:
    """Each deployment's instance count over time: (since, count, instance type), from its instance events."""
    series: dict[str, list[tuple[datetime, int, str]]] = {}
    for event in sorted((e for e in events if e.kind == DEPLOYMENT_INSTANCES), key=lambda e: e.time):
        series.setdefault(event.subject, []).append(
            (event.time, int(event.data.get("instances", 0)), event.data.get("instanceType", "")))
    return series
