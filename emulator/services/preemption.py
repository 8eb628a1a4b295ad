"""Preemption use cases, shared by the api (on demand, per-cluster policy) and the controller (random).

A preemption is recorded as a notice on the node; the controller carries it out (tells the node, signals
the job, takes the node at NotBefore). Nothing here touches Docker.
"""

from datetime import datetime

from emulator.domain import events as kinds
from emulator.domain.compute import preemption
from emulator.domain.compute.cluster import ACTIVE, NodeState
from emulator.errors import Conflict, NotFound
from emulator.services import computes, events
from emulator.settings import Settings
from emulator.store.tables import Compute, Node


def default_policy(settings: Settings) -> preemption.Policy:
    return preemption.Policy(settings.preemption_mean_seconds, settings.preemption_seed, settings.on_preemption)


def policy_of(compute: Compute, settings: Settings) -> preemption.Policy:
    """The cluster's own policy where one was set, else the global settings."""
    if compute.preemption is None:
        return default_policy(settings)
    return preemption.parse_policy(compute.preemption, default_policy(settings))


def set_policy(compute: Compute, body: object, settings: Settings) -> preemption.Policy:
    _low_priority(compute)
    current = policy_of(compute, settings)
    policy = preemption.parse_policy(body, current)
    if policy != current:
        compute.preemption, compute.chaos = policy.to_row(), None  # a new timeline from now
    return policy


def candidates(nodes: list[Node]) -> list[Node]:
    """Nodes a preemption may take: up (or coming up) and not already under notice, oldest first."""
    return [n for n in nodes if NodeState(n.state) in ACTIVE and n.notice is None and n.container_id]


def preempt(compute: Compute, nodes: list[Node], node_id: str | None, event_id: str, now: datetime,
            settings: Settings) -> Node:
    """Give a node of `compute` a Preempt notice: the one named, else a running one, else any."""
    _low_priority(compute)
    if node_id is not None:
        node = next((n for n in nodes if n.node_id.lower() == node_id.lower()), None)
        if node is None:
            listed = ", ".join(n.node_id for n in nodes) or "none"
            raise NotFound(f"Node '{node_id}' is not in cluster '{compute.name}' (its nodes: {listed}).",
                           target="nodeId")
        if node not in candidates([node]):
            raise Conflict(f"Node '{node.node_id}' cannot be preempted now: it is {node.state}"
                           f"{' and already has a preemption notice' if node.notice else ''}.", target="nodeId")
    else:
        pool = candidates(nodes)
        if not pool:
            raise Conflict(f"Cluster '{compute.name}' has no node to preempt (preempted, leaving and starting nodes "
                           "do not count). Submit a job to bring one up.", target="computeName")
        node = next((n for n in pool if n.state == NodeState.RUNNING), pool[0])
    notice = preemption.new_notice(event_id, node.node_id, now, settings.scaled(settings.preemption_notice_seconds))
    node.notice, node.noticed = notice.to_row(), False
    events.of_node(compute, node, kinds.NODE_NOTICE, now, eventId=event_id, job=node.run_id,
                   notBefore=notice.not_before.isoformat())
    return node


def acknowledge(node: Node, event_ids: list[str]) -> bool:
    """A StartRequests POST from the node: the event starts now. Unknown or repeated ids are fine (Azure: 200)."""
    if node.notice is None:
        return False
    notice = preemption.Notice.from_row(node.notice)
    if notice.event_id not in event_ids or notice.status == preemption.STARTED:
        return False
    node.notice = notice.start().to_row()
    return True


def _low_priority(compute: Compute) -> None:
    if compute.compute_type != "AmlCompute":
        raise Conflict(f"'{compute.name}' is a {compute.compute_type}; only AmlCompute clusters have low-priority "
                       "nodes.", target="computeName")
    spec = computes.spec_of(compute)
    if not spec.low_priority:
        raise Conflict(f"Cluster '{compute.name}' is {spec.priority}: only LowPriority nodes can be preempted. "
                       "Create the cluster with tier='low_priority' (vmPriority LowPriority).", target="computeName")
