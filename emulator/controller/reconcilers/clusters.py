"""Reconciles AmlCompute clusters: node containers against the store, scaled by the pure autoscaler.

Each pass reads the store and the containers, decides in a short transaction, and touches Docker
outside it, so the api never waits on the engine. Every pass is level-based and idempotent: a
restarted controller adopts the containers its labels name and removes the rest.
"""

import logging
import random
from collections.abc import Callable
from dataclasses import replace
from datetime import datetime

import redis

from emulator.controller.effects import Actuator, Effects
from emulator.controller.host_pools import HostPools
from emulator.controller.scheduling.preemption import Preemptions
from emulator.controller.scheduling.scheduler import JobScheduler
from emulator.controller.specs.host_nodes import host_node_spec, setup_error
from emulator.controller.specs.nodes import detached, new_node_id, node_spec
from emulator.controller.start_failures import StartFailures
from emulator.controller.steps import Steps
from emulator.controller.workspace_networks import WorkspaceNetworks
from emulator.dispatch.celery_app import ready_key
from emulator.domain import events as kinds
from emulator.domain.compute import cluster, local, placement
from emulator.domain.compute.cluster import NodeState
from emulator.domain.ids import WorkspaceRef
from emulator.runtime import labels
from emulator.runtime.base import ContainerSpec, Observed, Runtime
from emulator.services import capacity, computes, events, operations, quotas
from emulator.settings import Settings
from emulator.store.db import Store
from emulator.store.tables import Compute, Node

log = logging.getLogger("amlemu.controller")
UNUSABLE_KEEP_SECONDS = 60.0
LEAVE_GRACE_SECONDS = 30.0


class ClusterReconciler:
    def __init__(self, settings: Settings, store: Store, runtime: Runtime, broker: redis.Redis,
                 clock: Callable[[], datetime], scheduler: JobScheduler | None = None,
                 act: Actuator | None = None, preemptions: Preemptions | None = None,
                 networks: WorkspaceNetworks | None = None, entropy: random.Random | None = None,
                 pools: HostPools | None = None):
        """`runtime`: every engine nodes run on (runtime/engines.py), where `pools` places a pooled cluster's."""
        self.settings, self.store, self.runtime, self.broker, self.clock = settings, store, runtime, broker, clock
        # Jobs: who gets the idle nodes, and how many nodes queued work wants; `act` carries out what was decided.
        self.scheduler = scheduler
        self.act = act or Actuator(runtime, broker, settings.stack)
        self.preemptions = preemptions
        self.entropy = entropy or random.Random()  # the seed of a capacity schedule set without one
        # Nodes join their workspace's jobs network, where their jobs (and only those) reach them.
        self.networks = networks or WorkspaceNetworks(settings, store, runtime)
        # On the first pass after a start, a node whose container is absent altogether was taken down with
        # the stack (`amlemu down`), not lost: it is forgotten rather than shown unusable.
        self.first_pass = True
        self.failures = StartFailures()
        self.steps = Steps()
        self.pools = pools

    def node_labels(self) -> dict[str, str]:
        return {labels.STACK: self.settings.stack, labels.ROLE: "node"}

    def tick(self, containers: list[Observed] | None = None) -> None:
        """`containers`: the stack's node containers when the caller has just listed them."""
        now = self.clock()
        containers = self.runtime.list(self.node_labels()) if containers is None else containers
        observed = {c.labels.get(labels.NODE): c for c in containers}
        with self.store.transaction() as repo:
            keys = [c.key for c in repo.computes() if c.compute_type == "AmlCompute"]
            capacity.schedule(repo, self.settings, now, self.entropy)  # the settings' schedule runs from the start
        live: set[str] = set()
        for key in keys:  # each on its own: a cluster that fails keeps its nodes, the others go on
            if not self.steps.run(f"cluster {key}", lambda k=key: live.update(self.reconcile(k, observed, now))):
                live.update(n for n, c in observed.items() if c.labels.get(labels.COMPUTE_ID) == key)
        self.first_pass = False
        for node_id, container in observed.items():
            if node_id not in live:
                log.info("removing orphan node container %s", container.name)
                self.runtime.remove(container.id)

    def reconcile(self, key: str, observed: dict[str, Observed], now: datetime) -> set[str]:
        effects = Effects()
        # a pooled cluster's jobs are sent once their images are on its hosts (copied outside the transaction)
        ready = self.pools.prepare(key) if self.pools is not None else True
        with self.store.transaction() as repo:
            compute = repo.compute(key)
            if compute is None:
                return set()
            nodes = repo.nodes(key)
            for node in nodes:
                self._observe(repo, compute, node, observed.get(node.node_id), now, effects)
            spec = computes.spec_of(compute)
            if self.preemptions:
                self.preemptions.tick(repo, compute, spec.low_priority, nodes, now, effects)
            deleting = compute.provisioning_state == "Deleting" or repo.workspace(compute.workspace_key) is None
            if deleting:
                effects.remove += [observed[n.node_id].id for n in nodes if n.node_id in observed]
                effects.forget += [n.node_id for n in nodes]
                live = set()
            else:
                live = self._scale(repo, compute, spec, now, effects, observed, ready)
        self._apply(effects)
        if deleting:  # the operation completes only once the containers are gone
            self._finish_delete(key)
        else:  # a node of an older stack, on the shared jobs network only, joins its workspace's
            for node_id in live:
                container = observed.get(node_id)
                if container is not None and container.running and labels.HOST not in container.labels:
                    self.networks.attach(container, self.settings.jobs_network(WorkspaceRef.from_key(key).key))
        return live

    def _observe(self, repo, compute: Compute, node: Node, container: Observed | None, now: datetime,
                 effects: Effects) -> None:
        state = NodeState(node.state)
        alive = container is not None and container.running
        if state == NodeState.PREEMPTED:  # taken: listed for a while (see Preemptions), its container goes
            if container is not None and not container.running:
                effects.remove.append(container.id)
            return
        if state == NodeState.UNUSABLE:
            self._unusable(repo, compute, node, container, now, effects)
            return
        if not alive:
            self._gone(repo, compute, node, container, now, effects)
            return
        if node.container_id != container.id:  # started by a controller that died before recording it
            node.container_id, node.private_ip = container.id, container.ip
        if state == NodeState.LEAVING:
            if (now - node.state_changed_at).total_seconds() >= LEAVE_GRACE_SECONDS:
                effects.kill.append(container.id)
        elif state == NodeState.PREPARING and self._ready(node, now):
            self._set_state(node, NodeState.IDLE, now)
            node.idle_since = now
            events.of_node(compute, node, kinds.NODE_UP, now)

    def _unusable(self, repo, compute: Compute, node: Node, container: Observed | None, now: datetime,
                  effects: Effects) -> None:
        """Dropped after the keep time; one that never started, when a retry is due."""
        if container is not None:  # on a host that was cut off and is back: what ran there must not go on
            effects.remove.append(container.id)
        kept = (now - node.state_changed_at).total_seconds() >= self.settings.scaled(UNUSABLE_KEEP_SECONDS)
        if kept or (node.container_id is None and self.failures.due(compute.key, now)):
            events.of_node(compute, node, kinds.NODE_GONE, now)
            repo.remove(node)

    def _gone(self, repo, compute: Compute, node: Node, container: Observed | None, now: datetime,
              effects: Effects) -> None:
        if container is not None:
            effects.remove.append(container.id)
        effects.forget.append(node.node_id)
        if self.scheduler:  # whatever it ran goes back to the queue
            self.scheduler.node_lost(repo, compute, node, now, effects)
        if node.state == NodeState.LEAVING or node.container_id is None or (container is None and self.first_pass):
            events.of_node(compute, node, kinds.NODE_GONE, now)
            repo.remove(node)  # gone as asked, never started (a crash mid-start), or taken down with the stack
        else:
            log.warning("node %s died (exit %s)", node.node_id, container and container.exit_code)
            self._set_state(node, NodeState.UNUSABLE, now)
            events.of_node(compute, node, kinds.NODE_UNUSABLE, now, exitCode=container and container.exit_code)

    def _ready(self, node: Node, now: datetime) -> bool:
        delay = self.settings.scaled(self.settings.provisioning_delay_seconds)
        return (now - node.created_at).total_seconds() >= delay and bool(self.broker.exists(ready_key(node.node_id)))

    @staticmethod
    def _set_state(node: Node, state: NodeState, now: datetime) -> None:
        node.state, node.state_changed_at = state.value, now
        if state != NodeState.IDLE:
            node.idle_since = None

    def _finish_delete(self, key: str) -> None:
        with self.store.transaction() as repo:
            compute = repo.compute(key)
            if compute is None:
                return
            for node in repo.nodes(key):
                events.of_node(compute, node, kinds.NODE_GONE, self.clock(), reason="cluster deleted")
            repo.drop_nodes(key)
            operations.finish(repo, key, self.clock())
            repo.remove(compute)
        log.info("deleted cluster %s", compute.name)

    def _scale(self, repo, compute: Compute, spec: cluster.ClusterSpec, now: datetime, effects: Effects,
               observed: dict[str, Observed], ready: bool) -> set[str]:
        if compute.provisioning_state in ("Creating", "Updating"):
            compute.provisioning_state = "Succeeded"
            operations.finish(repo, compute.key, now)
        nodes = repo.nodes(compute.key)
        # nodes offered only once what they need is there: until then the queue's demand alone is asked
        demand, pending = self.scheduler.schedule(repo, compute, nodes if ready else [], now, effects) \
            if self.scheduler else (0, 0)
        views = [cluster.NodeView(n.node_id, NodeState(n.state), n.idle_since) for n in nodes]
        # the local capacity and attached Kubernetes compute run locally: no Azure quota or capacity shortage holds them
        growing = (demand or spec.scale.min_nodes) and not local.unmetered(compute.name)
        room = quotas.room(repo, self.settings, compute)[0] if growing else None
        shortage = capacity.for_cluster(repo, self.settings, compute, now) if growing else None
        plan = cluster.plan_scale(views, demand=demand, scale=spec.scale, now=now,
                                  idle_seconds=self.settings.scaled(spec.scale.idle_seconds), room=room,
                                  available=shortage is None)
        quotas.held_back(repo, self.settings, compute, plan.held_back, now)
        capacity.held_back(repo, compute, plan.short, shortage, now)
        if pending:  # an idle node told to leave now might be the one taking a dispatched job
            plan = replace(plan, remove=(), target=plan.target + len(plan.remove))
        by_id = {n.node_id: n for n in nodes}
        for node_id in plan.remove:
            self._set_state(by_id[node_id], NodeState.LEAVING, now)
            effects.stop.append(by_id[node_id].container_id)
            events.of_node(compute, by_id[node_id], kinds.NODE_LEAVING, now)
        # A node that failed to start holds its slot until it is dropped when a retry is due (with backoff).
        failed = sum(n.state == NodeState.UNUSABLE and n.container_id is None for n in nodes)
        for host in self._places(repo, compute, max(0, plan.add - failed), observed):
            node = Node(node_id=new_node_id(spec.low_priority), compute_key=compute.key,
                        state=NodeState.PREPARING.value, created_at=now, state_changed_at=now)
            repo.add(node)
            nodes.append(node)
            events.of_node(compute, node, kinds.NODE_ADDED, now, vmSize=spec.vm_size.name, priority=spec.priority)
            effects.start.append(
                host_node_spec(self.settings, compute, node.node_id, pooled=(spec, host)) if host else
                node_spec(self.settings, compute, spec, node.node_id, own_data=detached(self.settings, compute)))
        allocation = cluster.allocation_state([NodeState(n.state) for n in nodes], plan.target)
        if allocation != compute.allocation_state:
            compute.allocation_state, compute.allocation_changed_at = allocation, now
        if plan.target != compute.target_nodes:
            events.record(repo, compute.workspace_key, kinds.CLUSTER_SCALED, compute.key, now,
                          previous=compute.target_nodes, target=plan.target)
        compute.target_nodes = plan.target
        return {n.node_id for n in nodes}

    def _places(self, repo, compute: Compute, count: int, observed: dict[str, Observed]) -> list[str]:
        """Where each of `count` new nodes runs: the local engine (""), or for a pooled cluster the host its pool's
        placement picks; fewer places than nodes when no host of the pool answers (they wait for one)."""
        if not count or self.pools is None or not placement.pool_of((compute.body or {}).get("tags")):
            return [placement.LOCAL] * count
        if (error := setup_error(self.settings)) is not None:
            quotas.set_node_error(compute, error)
            return []
        return self.pools.place(repo, compute, count, observed.values())

    def _apply(self, effects: Effects) -> None:
        self.act(effects)
        for spec in effects.start:
            self._start(spec.labels[labels.NODE], spec)

    def _start(self, node_id: str, spec: ContainerSpec) -> None:
        key, what = spec.labels[labels.COMPUTE_ID], f"node {node_id} of {spec.labels[labels.COMPUTE]}"
        try:
            if labels.HOST not in spec.labels:  # on an attached host: the engines make its network there
                self.networks.jobs(WorkspaceRef.from_key(key).key)
            container, error = self.runtime.run(spec), None
            self.failures.started(key, what)
        except Exception as exc:  # the node becomes unusable and says why; the cluster retries with backoff
            container, reason = None, getattr(exc, "message", str(exc)).replace(spec.name, "<node>")
            self.failures.failed(key, what, reason, self.clock())
            error = {"error": {"code": "NodeSetupFailure", "message": f"Node {node_id} could not start: {reason}"}}
        with self.store.transaction() as repo:
            node, compute = repo.session.get(Node, node_id), repo.compute(key)
            if node is None:  # deleted meanwhile: the orphan sweep takes the container
                return
            if container is None:
                self._set_state(node, NodeState.UNUSABLE, self.clock())
            else:
                node.container_id, node.private_ip = container.id, container.ip
            if compute is not None and (error or compute.errors):  # quota entries stay: they have their own pass
                quotas.set_node_error(compute, error)
