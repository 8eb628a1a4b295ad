"""Carries out preemptions on low-priority clusters, inside the cluster reconciler's transaction.

A notice is recorded on the node (by the api on demand, or here when the seeded random timeline says so);
each pass then publishes the node's Scheduled Events document (the notice comes with no signal, as on Azure,
unless AMLEMU_SIGNAL_ON_NOTICE asks for one); at NotBefore or on acknowledgement takes the node: SIGTERM to
its job, then, once the job has ended or after a short grace, SIGKILL, `preempted`, and its job back to the
queue (or failed); and after the keep time drops the preempted node from the list.
"""

import logging
import random
from collections.abc import Callable
from datetime import datetime

from emulator.controller.effects import Effects
from emulator.controller.scheduling.scheduler import JobScheduler
from emulator.domain import events as kinds
from emulator.domain.compute import preemption
from emulator.domain.compute.cluster import NodeState
from emulator.services import events
from emulator.services import preemption as service
from emulator.settings import Settings
from emulator.store.repositories import Repository
from emulator.store.tables import Compute, Node

log = logging.getLogger("amlemu.controller")


class Preemptions:
    def __init__(self, settings: Settings, scheduler: JobScheduler | None, entropy: random.Random,
                 new_event_id: Callable[[], str]):
        self.settings, self.scheduler, self.entropy, self.new_event_id = settings, scheduler, entropy, new_event_id

    def apply_event(self, repo: Repository, event: dict) -> None:
        """A node's IMDS relayed a StartRequests POST: the event starts, and the next pass takes the node."""
        node = repo.session.get(Node, event.get("node") or "")
        if node is not None and service.acknowledge(node, [str(e).upper() for e in event.get("events", [])]):
            log.info("node %s acknowledged its preemption notice", node.node_id)

    def tick(self, repo: Repository, compute: Compute, low_priority: bool, nodes: list[Node], now: datetime,
             effects: Effects) -> None:
        if not low_priority:
            return
        self._draw(compute, nodes, now)
        for node in nodes:
            if node.notice is not None:
                self._carry_out(repo, compute, node, now, effects)

    def _draw(self, compute: Compute, nodes: list[Node], now: datetime) -> None:
        """New notices from the cluster's random timeline, if its policy has one."""
        policy = service.policy_of(compute, self.settings)
        if policy.mean_seconds is None:
            return
        chaos = dict(compute.chaos or {"seed": preemption.unseeded(policy.seed, self.entropy),
                                       "since": now.isoformat(), "done": 0})
        timeline = preemption.Timeline(chaos["seed"], compute.key, self.settings.scaled(policy.mean_seconds),
                                       datetime.fromisoformat(chaos["since"]))
        due = timeline.due(chaos["done"], now)
        for n in range(chaos["done"], chaos["done"] + due):
            victim = timeline.victim(n, [c.node_id for c in service.candidates(nodes)])
            if victim is None:
                log.info("random preemption %d of %s: no node to take", n + 1, compute.name)
                continue
            service.preempt(compute, nodes, victim, self.new_event_id(), now, self.settings)
            log.info("random preemption %d of %s: notice to node %s", n + 1, compute.name, victim)
        chaos["done"] += due
        if chaos != compute.chaos:
            compute.chaos = chaos

    def _carry_out(self, repo: Repository, compute: Compute, node: Node, now: datetime, effects: Effects) -> None:
        notice = preemption.Notice.from_row(node.notice)
        if node.state == NodeState.PREEMPTED:
            keep = self.settings.scaled(preemption.PREEMPTED_KEEP_SECONDS)
            if (now - node.state_changed_at).total_seconds() >= keep:
                effects.notices.append((node.node_id, None))
                events.of_node(compute, node, kinds.NODE_GONE, now)
                repo.remove(node)
            return
        if not node.noticed:
            node.noticed = True
            log.info("node %s of %s: Preempt notice %s, not before %s", node.node_id, compute.name,
                     notice.event_id, preemption.rfc1123(notice.not_before))
            if self.settings.signal_on_notice:  # an emulator convenience: Azure's notice comes with no signal
                effects.signal_jobs += [(*rank, "SIGTERM") for rank in _ranks_on(repo, compute, node)]
        if notice.due(now) and notice.taken_at is None:
            notice = notice.take(now)
            node.notice = notice.to_row()
            log.warning("node %s of %s taken: SIGTERM to its job, killed within %g s", node.node_id, compute.name,
                        preemption.SHUTDOWN_GRACE_SECONDS)
            effects.signal_jobs += [(*rank, "SIGTERM") for rank in _ranks_on(repo, compute, node)]
        if notice.kill_due(now, busy=node.run_id is not None):
            self._kill(repo, compute, node, now, effects)
        # Published every pass (level-based), before any signal: a restarted controller or Redis loses nothing.
        effects.notices.append((node.node_id, preemption.document(notice)))

    def _kill(self, repo: Repository, compute: Compute, node: Node, now: datetime, effects: Effects) -> None:
        """The VM is gone: its container and its jobs' are killed, its job goes back to the queue (or fails)."""
        log.warning("node %s of %s preempted", node.node_id, compute.name)
        events.of_node(compute, node, kinds.NODE_PREEMPTED, now, job=node.run_id)
        if node.container_id:
            effects.kill.append(node.container_id)  # its job's containers go as the job is requeued or failed
        if self.scheduler:
            self.scheduler.node_lost(repo, compute, node, now, effects, service.policy_of(compute, self.settings))
        node.state, node.state_changed_at, node.idle_since, node.run_id = NodeState.PREEMPTED.value, now, None, None


def _ranks_on(repo: Repository, compute: Compute, node: Node) -> list[tuple[str, int, int]]:
    """(job key, attempt, rank) of what the node runs."""
    job = repo.job(f"{compute.workspace_key}/jobs/{node.run_id}") if node.run_id else None
    if job is None:
        return []
    return [(job.key, job.attempt, int(rank)) for rank, held in job.ranks.items() if held.get("node") == node.node_id]
