"""Jobs on attached VirtualMachine compute (issue 23): the controller keeps one node for each attached host, on the
host's own engine (specs/host_nodes.py), and sends it the compute's jobs through the scheduler and queue every
cluster uses, one at a time (the machine is the job's target, as in Azure). What a node there needs is copied
there first: the node image, and each queued job's environment image, recorded on the compute so that its detach
removes them (controller/hosts.py).

A host that cannot be reached takes its node with it at once (placement.lost): the node is unusable and its job
goes back to the queue, as for a node that died. Once the host answers again, whatever the emulator left there
that no live node owns (the old node's container and data volume) is removed, and a new node starts."""

import logging
from collections.abc import Callable
from datetime import datetime

import redis

from emulator.controller.effects import Actuator, Effects
from emulator.controller.host_engines import HostEngines, RuntimeOf
from emulator.controller.host_pools import copy_images
from emulator.controller.reconcilers.job_containers import JobContainers
from emulator.controller.scheduling.scheduler import JobScheduler
from emulator.controller.specs.host_nodes import host_network, host_node_spec, setup_error
from emulator.controller.specs.nodes import new_node_id
from emulator.dispatch.celery_app import ready_key
from emulator.domain.compute import placement
from emulator.domain.compute.cluster import NodeState
from emulator.domain.jobs.status import JobStatus
from emulator.runtime import labels
from emulator.runtime.base import Observed
from emulator.runtime.hosts import UNREACHABLE, HostAccess, HostCheckFailed, HostRuntime
from emulator.services import attached, quotas
from emulator.settings import Settings
from emulator.store.db import Store
from emulator.store.repositories import Repository
from emulator.store.tables import Compute, Node

log = logging.getLogger("amlemu.controller")
UNUSABLE_KEEP_SECONDS = 60.0  # as a cluster's: an unusable node is listed a while, then forgotten


class HostNodes:
    """`source`: the emulator's own engine (a docker client), where the images to copy are."""

    def __init__(self, settings: Settings, store: Store, broker: redis.Redis, clock: Callable[[], datetime],
                 secret: bytes, scheduler: JobScheduler, source, send: Callable[[str, dict], None] | None = None,
                 runtime_of: RuntimeOf = HostRuntime,
                 active_attempts: Callable[[Repository], dict[str, int]] | None = None,
                 engines: HostEngines | None = None):
        """`active_attempts`: the jobs reconciler's, for the sweep of job containers left on a host."""
        self.settings, self.store, self.broker, self.clock, self.secret = settings, store, broker, clock, secret
        self.active_attempts = active_attempts
        self.scheduler, self.source, self.send, self.runtime_of = scheduler, source, send, runtime_of
        self.engines = engines or HostEngines(clock, runtime_of)

    def tick(self) -> None:
        with self.store.transaction() as repo:
            hosts = [(row.key, row.name, access) for row in repo.computes()
                     if row.compute_type == attached.COMPUTE_TYPE and row.provisioning_state == "Succeeded"
                     and (access := self._access(row)) is not None]
        self.engines.keep({key for key, _, _ in hosts})
        for key, name, access in hosts:
            try:
                self.reconcile(key, name, access)
            except UNREACHABLE as exc:  # lost mid-pass: the next pass finds it unreachable and acts on it
                log.warning("attached host %s stopped answering: %s", name, exc)
                self.engines.lost(key)

    def _access(self, row: Compute) -> HostAccess | None:
        try:
            return attached.access_of(row, self.secret)
        except ValueError as exc:  # sealed under another token key: the attach must be made again
            log.warning("attached compute %s cannot be used: %s", row.name, exc)
            return None

    def _owned(self, key: str) -> dict[str, str]:
        return {labels.STACK: self.settings.stack, labels.COMPUTE_ID: key}

    def reconcile(self, key: str, name: str, access: HostAccess) -> None:
        runtime = self.engines.get(key, name, access)
        observed = {} if runtime is None else \
            {c.labels.get(labels.NODE): c for c in runtime.list({**self._owned(key), labels.ROLE: "node"})}
        ready = runtime is not None and self._copy_images(key, runtime)
        now, effects, start = self.clock(), Effects(), None
        with self.store.transaction() as repo:
            compute = repo.compute(key)
            if compute is None or compute.provisioning_state != "Succeeded":
                return
            nodes = repo.nodes(key)
            views = [placement.HostView(name, runtime is not None, float(compute.body["attached"].get("cpus") or 1),
                                        len(observed))]
            lost = set(placement.lost(views, {n.node_id: name for n in nodes}))
            for node in nodes:
                self._observe(repo, compute, node, observed.get(node.node_id), node.node_id in lost, now, effects)
            live = [n for n in repo.nodes(key) if n.state != NodeState.UNUSABLE.value]
            if runtime is not None and not live and (error := setup_error(self.settings)) is not None:
                quotas.set_node_error(compute, error)
            elif runtime is not None and not live:
                node = Node(node_id=new_node_id(False), compute_key=key, state=NodeState.PREPARING.value,
                            created_at=now, state_changed_at=now)
                repo.add(node)
                live.append(node)
                start = host_node_spec(self.settings, compute, node.node_id)
            if ready:
                self.scheduler.schedule(repo, compute, live, now, effects)
            keep = {n.node_id for n in live}
        if runtime is None:  # nothing there can be touched now; the queue and the jobs can
            effects.stop, effects.kill, effects.remove, effects.drop_volumes = [], [], [], []
            effects.signal_jobs, effects.stop_jobs = [], []
            Actuator(_Unreachable(), self.broker, self.settings.stack, send=self.send)(effects)
            return
        # What a lost node left goes before anything is sent: back on the network, its worker (its job container
        # swept, or ended meanwhile) would take the requeued attempt off the queue, claim it and die with it.
        self._remove_orphans(key, runtime, keep)
        Actuator(runtime, self.broker, self.settings.stack, send=self.send)(effects)
        if start is not None:
            self._start(key, runtime, compute, start)

    def _observe(self, repo, compute: Compute, node: Node, container: Observed | None, host_lost: bool,
                 now: datetime, effects: Effects) -> None:
        if node.state == NodeState.UNUSABLE.value:
            if (now - node.state_changed_at).total_seconds() >= self.settings.scaled(UNUSABLE_KEEP_SECONDS):
                repo.remove(node)
            return
        if host_lost or container is None or not container.running:
            if node.container_id is None and not host_lost:  # still starting (its container is recorded after)
                return
            log.warning("node %s of attached host %s is lost (%s)", node.node_id, compute.name,
                        "host unreachable" if host_lost else "its container is gone")
            effects.forget.append(node.node_id)
            self.scheduler.node_lost(repo, compute, node, now, effects)
            node.state, node.state_changed_at, node.idle_since = NodeState.UNUSABLE.value, now, None
            return
        if node.container_id != container.id:  # started by a controller that died before recording it
            node.container_id, node.private_ip = container.id, container.ip
        if node.state == NodeState.PREPARING.value and self.broker.exists(ready_key(node.node_id)):
            node.state, node.state_changed_at, node.idle_since = NodeState.IDLE.value, now, now

    def _copy_images(self, key: str, runtime: HostRuntime) -> bool:
        """The node image and every queued job's environment image made present on the host."""
        with self.store.transaction() as repo:
            images = [self.settings.node_image] + [
                job.image for job in repo.jobs_in((JobStatus.QUEUED.value,), key) if job.image]
        return copy_images(self.store, self.source, key, runtime, images)

    def _remove_orphans(self, key: str, runtime: HostRuntime, keep: set[str]) -> None:
        """Node containers and data volumes of no live node, and job containers of no current attempt (those of a
        lost node, its job requeued): what a host that was cut off keeps until it answers again."""
        if self.active_attempts is not None:
            JobContainers(self.settings, self.store, runtime, self.broker, self.active_attempts).tick(
                runtime.list({labels.STACK: self.settings.stack, labels.ROLE: "job"}))
        for container in runtime.list(self._owned(key)):
            if container.labels.get(labels.NODE) not in keep:
                log.info("removing %s from an attached host: no live node owns it", container.name)
                runtime.remove(container.id)
        for volume in runtime.volumes(self._owned(key)):
            if not any(volume.endswith(node_id) for node_id in keep):
                runtime.remove_volume(volume)

    def _start(self, key: str, runtime: HostRuntime, compute: Compute, spec) -> None:
        node_id = spec.labels[labels.NODE]
        try:
            runtime.ensure_network(host_network(self.settings, compute), self._owned(key))
            container = runtime.run(spec)
        except UNREACHABLE as exc:
            log.warning("node %s could not start on attached host %s: %s", node_id, compute.name, exc)
            container = None
        with self.store.transaction() as repo:
            node = repo.session.get(Node, node_id)
            if node is None:
                return
            if container is None:
                node.state, node.state_changed_at = NodeState.UNUSABLE.value, self.clock()
            else:
                node.container_id, node.private_ip = container.id, container.ip


class _Unreachable:
    """The runtime of a host that does not answer: the actuator is given nothing to do there."""

    def __getattr__(self, name):
        raise HostCheckFailed("address", "the host cannot be reached")
