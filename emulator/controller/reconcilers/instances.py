"""Reconciles compute instances: brings each one's containers to what its record says.

A running instance is two containers of one generation: the workstation (JupyterLab, a terminal, sshd; the
user's home on a named volume, so files outlive stop, start and restart) and its agent, a node worker that
runs the instance's jobs in containers of their own (user code never sees the Docker socket, the workstation
included). Start and restart raise the generation: containers of an older one go. A stopped instance runs no
container. Each pass decides inside a short transaction and touches Docker outside it, level-based like the
clusters: a restarted controller adopts what the labels name and removes the rest.
"""

import json
import logging
import secrets
from collections.abc import Callable
from datetime import datetime

import redis

from emulator.controller.adoption import reconcile_owned
from emulator.controller.effects import Actuator, Effects
from emulator.controller.scheduling.attempts import abandon
from emulator.controller.scheduling.scheduler import JobScheduler
from emulator.controller.specs.instances import agent_spec, home_volume, workstation_spec
from emulator.controller.start_failures import StartFailures
from emulator.controller.steps import Steps
from emulator.controller.workspace_networks import WorkspaceNetworks
from emulator.dispatch.celery_app import ready_key
from emulator.domain import calendar
from emulator.domain.compute import instance, schedules
from emulator.domain.compute.cluster import NodeState
from emulator.domain.compute.instance import InstanceState, Trigger
from emulator.domain.ids import WorkspaceRef
from emulator.runtime import labels
from emulator.runtime.base import Observed, Runtime
from emulator.services import instances, operations
from emulator.settings import Settings
from emulator.store.db import Store
from emulator.store.repositories import Repository
from emulator.store.tables import Compute, Job, Node

log = logging.getLogger("amlemu.controller")
STOP_GRACE_SECONDS = 10.0  # SIGTERM, then the engine kills what is left
PROBE_SECONDS = 30.0  # platform seconds between activity probes while idle shutdown is on
UP = (InstanceState.CREATING, InstanceState.STARTING, InstanceState.RESTARTING, InstanceState.RUNNING,
      InstanceState.JOB_RUNNING)
COMING_UP = (InstanceState.CREATING, InstanceState.STARTING, InstanceState.RESTARTING)
LIVE = ("Queued", "Running", "Finalizing", "CancelRequested")  # a job's statuses while an attempt of it is out


class InstanceReconciler:
    def __init__(self, settings: Settings, store: Store, runtime: Runtime, broker: redis.Redis,
                 clock: Callable[[], datetime], scheduler: JobScheduler, act: Actuator,
                 networks: WorkspaceNetworks | None = None):
        self.settings, self.store, self.runtime, self.broker, self.clock = settings, store, runtime, broker, clock
        self.scheduler, self.act = scheduler, act
        self.networks = networks or WorkspaceNetworks(settings, store, runtime)  # it is on its workspace's
        self.probed: dict[str, datetime] = {}  # compute key -> last activity probe
        self.failures = StartFailures()
        self.steps = Steps()  # each record's reconcile on its own

    def tick(self, containers: list[Observed]) -> None:
        """`containers`: the stack's workstation and agent containers."""
        with self.store.transaction() as repo:
            keys = [c.key for c in repo.computes() if c.compute_type == "ComputeInstance"]
        reconcile_owned(keys, containers, labels.COMPUTE_ID, self.reconcile, self.runtime, "instance container", self.steps)

    def reconcile(self, key: str, containers: list[Observed]) -> None:
        now = self.clock()
        effects = Effects()
        with self.store.transaction() as repo:
            row = repo.compute(key)
            if row is None:
                return
            self._decide(repo, row, containers, now, effects)
        self._carry_out(key, effects)

    # ---------------------------------------------------------------- deciding

    def _decide(self, repo: Repository, row: Compute, containers: list[Observed], now: datetime, effects: Effects) -> None:
        record = row.instance
        generation = str(record["generation"])
        current = {c.labels.get(labels.ROLE): c for c in containers
                   if c.labels.get(labels.GENERATION) == generation and c.running}
        effects.remove += [c.id for c in containers if c.labels.get(labels.GENERATION) != generation or not c.running]
        self._follow_schedules(row, now)
        state = instances.state_of(row)
        agent = self._agent_node(repo, row, now)
        if state == InstanceState.DELETING:
            self._delete(repo, row, containers, agent, now, effects)
            return
        if state not in UP:
            self._stop(repo, row, containers, agent, now, effects)
        else:
            self._up(repo, row, state, current, agent, now, effects)

    def _up(self, repo: Repository, row: Compute, state: InstanceState, current: dict[str, Observed], agent: Node,
            now: datetime, effects: Effects) -> None:
        """Both containers of the generation running; then Running once Jupyter answers, and jobs go out."""
        workstation, worker = current.get("instance"), current.get("agent")
        if worker is None or (agent.container_id and agent.container_id != worker.id):
            self._agent_lost(repo, row, agent, worker, now, effects)
        if (workstation is None or worker is None) and not self.failures.due(row.key, now):
            return  # its last start failed (the instance says why): tried again with backoff
        if workstation is None:
            effects.start.append(workstation_spec(self.settings, row))
        if worker is None:
            effects.start.append(agent_spec(self.settings, row, agent.node_id))
        if workstation is None or worker is None:
            return
        if agent.state == NodeState.PREPARING and self.broker.exists(ready_key(agent.node_id)):
            agent.state, agent.state_changed_at, agent.idle_since = NodeState.IDLE.value, now, now
        if state in COMING_UP:
            if agent.state != NodeState.PREPARING:
                effects.probe.append(workstation.id)  # up once Jupyter answers
            return
        self._schedule_jobs(repo, row, agent, now, effects)
        if self._idle_seconds(row) is not None and self._probe_due(row.key, now):
            effects.probe.append(workstation.id)

    def _agent_node(self, repo: Repository, row: Compute, now: datetime) -> Node:
        """The instance's agent as a node row, so node reports (claimed, running, ended) apply as for clusters."""
        nodes = repo.nodes(row.key)
        if nodes:
            return nodes[0]
        node = Node(node_id=f"ci_{secrets.token_hex(8)}", compute_key=row.key, state=NodeState.PREPARING.value,
                    created_at=now, state_changed_at=now)
        repo.add(node)
        return node

    def _agent_lost(self, repo: Repository, row: Compute, agent: Node, worker: Observed | None, now: datetime,
                    effects: Effects) -> None:
        """The agent is new, restarted or gone: what it ran goes back to the queue; it comes up again."""
        if agent.container_id is not None:
            self.scheduler.node_lost(repo, row, agent, now, effects)
            effects.forget.append(agent.node_id)
        agent.container_id = worker.id if worker else None
        agent.state, agent.state_changed_at, agent.idle_since, agent.run_id = NodeState.PREPARING.value, now, None, None

    @staticmethod
    def _jobs(repo: Repository, row: Compute) -> list[Job]:
        """The instance's jobs with an attempt out (sent to its agent, running, or ending)."""
        return repo.jobs_in(LIVE, row.key, dispatched=True)

    def _schedule_jobs(self, repo: Repository, row: Compute, agent: Node, now: datetime, effects: Effects) -> None:
        """First come first served, as many at once as the instance has slots; Running ⇄ JobRunning follows."""
        out = self._jobs(repo, row)
        waiting = repo.jobs_in(("Queued",), row.key, dispatched=False)
        admitted = instance.admit(len(waiting), len(out), self.settings.instance_job_slots, instances.state_of(row))
        for job in waiting[:admitted]:
            self.scheduler.dispatch(repo, job, row, now, effects)
        # JobRunning once a job runs, not while its container is still being started: true at every moment
        running = sum(1 for job in out if job.status != "Queued")
        state = instance.with_jobs(instances.state_of(row), running)
        if state != instances.state_of(row):
            instances.change(row, now, state=state.value, idleSince=None)

    def _follow_schedules(self, row: Compute, now: datetime) -> None:
        """Start or stop as the instance's enabled schedules say, once per firing (the latest wins)."""
        spec = instances.parse_spec(row.body["properties"]["properties"])
        on_calendar = calendar.emulated(now, row.created_at, self.settings.time_scale)  # schedulesAt is on it too
        since = datetime.fromisoformat(row.instance.get("schedulesAt") or on_calendar.isoformat())
        fired = schedules.due(list(spec.schedules), since, on_calendar)
        row.instance = {**row.instance, "schedulesAt": on_calendar.isoformat()}
        if fired and instances.state_of(row) != InstanceState.DELETING:
            action = fired[-1]
            if instances.ask(row, action, Trigger.SCHEDULE, now):
                log.info("instance %s: %s by schedule", row.name, action)

    def _idle_seconds(self, row: Compute) -> float | None:
        idle = instances.parse_spec(row.body["properties"]["properties"]).idle_seconds
        return None if idle is None else self.settings.scaled(idle)

    def _probe_due(self, key: str, now: datetime) -> bool:
        last = self.probed.get(key)
        return last is None or (now - last).total_seconds() >= max(1.0, self.settings.scaled(PROBE_SECONDS))

    def _stop(self, repo: Repository, row: Compute, containers: list[Observed], agent: Node, now: datetime,
              effects: Effects) -> None:
        """Stopping (or stopped): jobs on it fail, containers get SIGTERM and go; then Stopped."""
        for job in self._jobs(repo, row):
            abandon(repo, job, now, effects, f"The compute instance {row.name} was stopped while the job ran.")
        running = [c for c in containers if c.running]
        since = instance.LastOperation.from_row(row.instance["lastOperation"]).time
        if running and (now - since).total_seconds() < STOP_GRACE_SECONDS:
            effects.stop += [c.id for c in running]
            return
        effects.remove += [c.id for c in running]
        if agent.container_id is not None:
            agent.container_id, agent.state = None, NodeState.PREPARING.value
            effects.forget.append(agent.node_id)
        if instances.state_of(row) == InstanceState.STOPPING:
            self._finish(repo, row, now)

    def _delete(self, repo: Repository, row: Compute, containers: list[Observed], agent: Node, now: datetime,
                effects: Effects) -> None:
        for job in self._jobs(repo, row):
            abandon(repo, job, now, effects, f"The compute instance {row.name} was deleted while the job ran.")
        if containers:
            effects.remove += [c.id for c in containers]
            return
        effects.forget.append(agent.node_id)
        effects.drop_volumes.append(home_volume(self.settings, row))
        repo.drop_nodes(row.key)
        operations.finish(repo, row.key, now)
        repo.remove(row)
        log.info("deleted compute instance %s", row.name)

    def _finish(self, repo: Repository, row: Compute, now: datetime) -> None:
        """The operation in progress is done: its end state, its LRO finished."""
        operation = instance.LastOperation.from_row(row.instance["lastOperation"])
        state, done = instance.finish(operation, True, now)
        if operation.name == "Create":
            row.provisioning_state = "Succeeded"
        instances.change(row, now, state=state.value, lastOperation=done.to_row())
        operations.finish(repo, row.key, now)
        log.info("instance %s: %s done, %s", row.name, operation.name, state.value)
        if operation.name == "Create" and row.instance.get("createStopped"):
            instances.ask(row, "Stop", Trigger.USER, now)

    # ---------------------------------------------------------------- containers

    def _carry_out(self, key: str, effects: Effects) -> None:
        self.act(effects)
        started = []
        for spec in effects.start:
            what = f"container {spec.labels[labels.ROLE]} of compute instance {spec.labels[labels.COMPUTE]}"
            try:
                self.networks.ready(spec, WorkspaceRef.from_key(key).key)
                started.append(self.runtime.run(spec))
            except Exception as exc:  # noqa: BLE001 (the instance says why; tried again with backoff)
                reason = getattr(exc, "message", str(exc)).replace(spec.name, "<container>")
                self.failures.failed(key, what, reason, self.clock())
                self._record(key, lambda repo, row, now, why=f"The {what} could not start: {reason}":
                             self._failed(repo, row, why, now))
                return
        if started:
            self.failures.started(key, f"compute instance {started[0].labels.get(labels.COMPUTE)}")
            self._record(key, lambda repo, row, now: self._started(repo, row, started))
        for workstation in effects.probe:
            self._probe(key, workstation)

    def _record(self, key: str, change: Callable[[Repository, Compute, datetime], None]) -> None:
        with self.store.transaction() as repo:
            row = repo.compute(key)
            if row is not None:
                change(repo, row, self.clock())

    @staticmethod
    def _started(repo: Repository, row: Compute, started: list[Observed]) -> None:
        if row.instance.get("errors") and instances.state_of(row) in UP:  # what kept it from starting is past
            row.instance = {**row.instance, "errors": None}
        for container in started:
            if container.labels.get(labels.ROLE) == "instance":
                ports = {str(port): host for port, host in container.ports.items()}
                row.instance = {**row.instance, "ports": ports, "ip": container.ip}
            elif container.labels.get(labels.ROLE) == "agent":
                for node in repo.nodes(row.key):
                    node.container_id = container.id

    @staticmethod
    def _failed(repo: Repository, row: Compute, message: str, now: datetime) -> None:
        """Its container could not start (no image, say): the operation in progress fails with the engine's
        reason; with none in progress (a running instance whose agent went), the instance lists it."""
        error = {"code": "ComputeInstanceFailed", "message": message}
        row.instance = {**row.instance, "errors": [{"error": error}]}
        operation = instance.LastOperation.from_row(row.instance["lastOperation"])
        if operation.status != "InProgress":
            return
        state, done = instance.finish(operation, False, now)
        instances.change(row, now, state=state.value, lastOperation=done.to_row())
        if operation.name == "Create":
            row.provisioning_state, row.provisioning_errors = "Failed", [{"error": error}]
        operations.finish(repo, row.key, now, status="Failed", error=error)

    def _probe(self, key: str, container_id: str) -> None:
        """Ask the workstation what is going on in it: up (Jupyter answers) and idle or not."""
        code, output = self.runtime.exec(container_id, ["amlemu-activity"])
        now = self.clock()
        self.probed[key] = now
        if code != 0:
            return  # still starting
        try:
            seen = json.loads(output.strip().splitlines()[-1])
        except (ValueError, IndexError):
            log.warning("instance %s: unreadable activity report %r", key, output[-200:])
            return
        with self.store.transaction() as repo:
            row = repo.compute(key)
            if row is None:
                return
            state = instances.state_of(row)
            if state in COMING_UP:
                self._finish(repo, row, now)
            elif state in (InstanceState.RUNNING, InstanceState.JOB_RUNNING):
                self._idle_check(repo, row, seen, now)

    def _idle_check(self, repo: Repository, row: Compute, seen: dict, now: datetime) -> None:
        jobs = len(self._jobs(repo, row))
        last = seen.get("last_activity")
        activity = instance.Activity(kernels=seen.get("kernels", 0), busy_kernels=seen.get("busy_kernels", 0),
                                     terminals=seen.get("terminals", 0), ssh_sessions=seen.get("ssh_sessions", 0),
                                     jobs=jobs, last_activity=datetime.fromisoformat(last) if last else None)
        previous = row.instance.get("idleSince")
        since = instance.idle_since(datetime.fromisoformat(previous) if previous else None, activity, now)
        row.instance = {**row.instance, "idleSince": since.isoformat() if since else None}
        idle = self._idle_seconds(row)
        if since is not None and idle is not None and instance.due_for_idle_shutdown(since, idle, now):
            log.info("instance %s idle since %s: idle shutdown", row.name, since.isoformat())
            instances.ask(row, "Stop", Trigger.IDLE_SHUTDOWN, now)

