"""Drives jobs from submission to their end, but for dispatching them to nodes (controller/scheduling).

- NotStarted → Starting → Preparing: the environment image is resolved, or built in a worker thread.
- Queued: the scheduler (called by the cluster and instance reconcilers, inside their transactions) hands the oldest
  queued job to idle nodes, all its ranks at once, and tells the autoscaler how many nodes are wanted.
- Running and after: nodes report on the event stream (claimed, running, ended) and `apply_event` moves the
  job on. A node lost mid-run sends its job back to the queue at once, as a new attempt.
"""

import logging
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from datetime import datetime
from pathlib import Path

from emulator import confined
from emulator.controller.effects import Effects
from emulator.controller.scheduling.attempts import preempt, release, requeue
from emulator.controller.steps import Steps
from emulator.dispatch.protocol import job_tag
from emulator.domain import events as kinds
from emulator.domain.compute import local, vm_sizes
from emulator.domain.compute.cluster import ClusterSpec, NodeState
from emulator.domain.ids import WorkspaceRef
from emulator.domain.jobs import artifacts, limits
from emulator.domain.jobs import command_job as job_rules
from emulator.domain.jobs.status import TERMINAL, JobStatus
from emulator.errors import EmulatorError
from emulator.services import computes, events, job_outputs, quotas
from emulator.services import preemption as preemption_service
from emulator.services.jobs import transition
from emulator.settings import Settings
from emulator.store.repositories import Repository
from emulator.store.tables import Job, Node

log = logging.getLogger("amlemu.controller")
S = JobStatus
RESEND_SECONDS = 10.0  # a rank still untaken while a node sat idle this long is sent again (duplicates are harmless)
STARTING = (S.NOT_STARTED.value, S.STARTING.value, S.PREPARING.value)


def _rank_failed(rank: dict) -> bool:
    return bool(rank.get("error") or rank.get("oom") or rank.get("limit") or rank.get("exit_code") not in (0, None))


def _failure(job: Job, rank: dict, cluster: ClusterSpec, settings: Settings) -> dict:
    spec = job_rules.spec_of(job.body)
    log_name = artifacts.log_name(int(rank.get("rank", 0)), spec.instance_count)
    tail = rank.get("tail") or ""
    if rank.get("error"):
        return {"code": "UserError", "message": f"The job could not run on node {rank.get('node')}: {rank['error']}"}
    if rank.get("limit"):  # its node stopped it past a bound (processes, disk)
        return limits.failure(rank["limit"], tail)
    if rank.get("oom"):
        _cpus, memory = vm_sizes.scaled_limits(cluster.vm_size, settings.resource_scale)
        return {"code": "UserError", "innerError": {"code": "OutOfMemory"},
                "message": f"Out of memory: the job used all {memory / 2**30:.2f} GiB of its node "
                           f"({cluster.vm_size.name}, {cluster.vm_size.memory_gb:g} GiB scaled by "
                           f"AMLEMU_RESOURCE_SCALE={settings.resource_scale:g}) and was killed. Use a VM size with "
                           f"more memory.\n{tail}".rstrip()}
    return {"code": "UserError", "innerError": {"code": "ExitCode", "exitCode": rank.get("exit_code")},
            "message": f"Execution failed. User process '{spec.command}' exited with status code "
                       f"{rank.get('exit_code')}. Please check log file '{log_name}' for error details. "
                       f"Error: {tail}".rstrip()}


class JobReconciler:
    """Job work that needs no nodes: events from nodes, preparation, cancellation, finalizing."""

    def __init__(self, settings: Settings, prepare: Callable[[dict, Callable[[str], None]], object],
                 cached: Callable[[dict], object | None]):
        self.settings, self.prepare, self.cached = settings, prepare, cached
        self.pool = ThreadPoolExecutor(max_workers=2, thread_name_prefix="environment")
        self.preparing: dict[str, Future] = {}
        self.steps = Steps()

    # events from nodes
    def apply_event(self, repo: Repository, event: dict, now: datetime, effects: Effects) -> None:
        kind = event.get("kind")
        if kind not in ("claimed", "running", "ended"):
            return  # "submitted" and friends only wake the loop
        job, node = repo.job(event["job"]), repo.session.get(Node, event["node"])
        if kind == "ended" and node is not None and job is not None and node.run_id == job.name:
            node.run_id = None
            if node.state == NodeState.RUNNING:
                node.state, node.state_changed_at, node.idle_since = NodeState.IDLE.value, now, now
        if job is not None and kind == "ended" and self._late_success(repo, job, event, now, effects):
            return
        if job is None or event["attempt"] != job.attempt or S(job.status) in TERMINAL or job.dispatched_at is None:
            return  # a stale attempt: its node stops it on its own
        rank = str(event["rank"])
        if kind == "claimed":
            self._claimed(repo, job, node, rank, now, effects)
        elif kind == "running":
            job.ranks = {**job.ranks, rank: {**job.ranks.get(rank, {}), "state": "running",
                                             "container": event.get("container")}}
            if job.status == S.QUEUED:
                transition(job, S.RUNNING, now)
        elif node is not None and node.notice is not None and _rank_failed(event) and job.status != S.CANCEL_REQUESTED:
            # It stopped under a preemption notice (SIGTERM, or it quit on reading the notice): preempted.
            compute = repo.compute(job.compute_key)
            preempt(repo, job, node.node_id, now, effects, preemption_service.policy_of(compute, self.settings))
        else:
            job.ranks = {**job.ranks, rank: {**job.ranks.get(rank, {}), **event, "state": "ended"}}
            self._settle(repo, job, now, effects)

    @staticmethod
    def _late_success(repo: Repository, job: Job, event: dict, now: datetime, effects: Effects) -> bool:
        """The previous attempt of a one-node job finished well just as its node was lost (its report came after
        the loss was seen), and the next attempt has not started: the work is done, so it stands and the next
        attempt is called off, rather than the job running twice."""
        if (event["attempt"] != job.attempt - 1 or job.status != S.QUEUED or job_rules.instance_count(job.body) != 1
                or event.get("exit_code") != 0 or _rank_failed(event) or any(r.get("state") == "running" for r in job.ranks.values())):
            return False
        log.info("%s: attempt %s finished as its node was lost; it stands, attempt %s is called off", job.name,
                 event["attempt"], job.attempt)
        release(repo, job, now, effects)
        job.ranks = {str(event["rank"]): {**event, "state": "ended"}}
        message = (f"Attempt {event['attempt']} ended successfully as its node was lost; its result stands and "
                   f"attempt {job.attempt} is not needed.")
        transition(job, S.RUNNING, now, message)
        transition(job, S.FINALIZING, now)
        return True

    def _claimed(self, repo: Repository, job: Job, node: Node | None, rank: str, now: datetime,
                 effects: Effects) -> None:
        if node is not None and node.state == NodeState.UNUSABLE:
            # A node already taken for lost took it (its host back on the network before the node's removal): the
            # rank goes with that node, as though it had died holding it, and the job runs again.
            requeue(repo, job, now, effects, f"Node {node.node_id}, already lost, took attempt {job.attempt}: "
                                             "the job runs again.")
            return
        self._bind(repo, job, node, rank, now)

    @staticmethod
    def _bind(repo: Repository, job: Job, node: Node | None, rank: str, now: datetime) -> None:
        job.ranks = {**job.ranks, rank: {"node": node.node_id if node else None, "state": "claimed", "rank": rank}}
        if node is not None and node.state == NodeState.PREPARING and (compute := repo.compute(job.compute_key)):
            events.of_node(compute, node, kinds.NODE_UP, now)  # it took the job before it was seen idle: it is up
        events.record(repo, job.workspace_key, kinds.JOB_ATTEMPT, job.key, now, attempt=job.attempt, rank=int(rank),
                      node=node.node_id if node else None, compute=job.compute_key)
        if node is None:
            return
        node.run_id = job.name
        if node.state in (NodeState.IDLE, NodeState.PREPARING):
            node.state, node.state_changed_at, node.idle_since = NodeState.RUNNING.value, now, None

    def _settle(self, repo: Repository, job: Job, now: datetime, effects: Effects) -> None:
        world = job_rules.instance_count(job.body)
        ranks = [job.ranks.get(str(r)) for r in range(world)]
        ended = [r for r in ranks if r and r["state"] == "ended"]
        if job.status == S.CANCEL_REQUESTED:
            return  # `tick` ends it once no rank runs
        failed = [r for r in ended if _rank_failed(r)]
        if not failed and len(ended) < world:
            return
        if job.status == S.QUEUED:  # its "running" report was lost: it did run
            transition(job, S.RUNNING, now)
        effects.clear.append(job.key)
        if failed:
            effects.stop_jobs.append(job.key)  # the other ranks stop with it
            compute = repo.compute(job.compute_key)
            job.error = _failure(job, failed[0], computes.spec_of(compute), self.settings)
            transition(job, S.FAILED, now, job.error["message"])
        else:
            transition(job, S.FINALIZING, now)

    # the pass over jobs in flight
    def tick(self, repo: Repository, now: datetime, effects: Effects) -> None:
        starting = repo.jobs_in(STARTING)
        for key in set(self.preparing) - {j.key for j in starting}:  # cancelled while its image builds
            self.preparing.pop(key)
        for job in starting:  # each on its own: one whose preparation raises must not hold up the others
            self.steps.run(f"preparing job {job.name}", self._advance_alone, repo, job, now)
        self._judge_queued(repo, now)
        for job in repo.jobs_in((S.FINALIZING.value,)):
            problems = []
            if repo.workspace(job.workspace_key) is not None:  # named outputs become assets of the workspace
                problems = job_outputs.register(repo, WorkspaceRef.from_key(job.workspace_key), job, now,
                                                self.settings.data_dir)
            transition(job, S.COMPLETED, now, **({"warning": "; ".join(problems)} if problems else {}))
        for job in repo.jobs_in((S.CANCEL_REQUESTED.value,)):
            effects.clear.append(job.key)
            effects.stop_jobs.append(job.key)
            if not any(r.get("state") in ("claimed", "running") for r in job.ranks.values()):
                transition(job, S.CANCELED, now)
        for job in repo.jobs_in(tuple(s.value for s in TERMINAL), dispatched=True):
            effects.clear.append(job.key)  # ended or cancelled with an attempt out: nothing of it may start
            effects.stop_jobs.append(job.key)
            job.dispatched_at = None

    def _judge_queued(self, repo: Repository, now: datetime) -> None:
        """Queued jobs that can never run fail: their compute was deleted, or (as Azure fails them) their node count
        alone is above the cluster's quota. One that fits once the quota frees waits (the cluster shows why)."""
        too_big: dict[tuple[str, int], str | None] = {}  # (compute, nodes): the quota's verdict, once a pass
        for job in repo.jobs_in((S.QUEUED.value,)):
            compute = repo.compute(job.compute_key)
            if compute is None:
                self._fail(job, now, f"The compute cluster {job.body.get('computeId')} was deleted.")
                continue
            if job.dispatched_at is not None:
                continue
            nodes = job_rules.instance_count(job.body)
            if (compute.key, nodes) not in too_big:
                too_big[compute.key, nodes] = quotas.never_fits(repo, self.settings, compute, nodes)
            if message := too_big[compute.key, nodes]:
                self._fail(job, now, message)

    def _advance_alone(self, repo: Repository, job: Job, now: datetime) -> None:
        """`_advance` in a savepoint: what it changed before raising is undone, the rest of the pass kept."""
        with repo.session.begin_nested():
            self._advance(repo, job, now)

    def _advance(self, repo: Repository, job: Job, now: datetime) -> None:
        if job.status == S.NOT_STARTED and job.body.get(local.AWAITING):
            return  # a local job: its client starts it (services/jobs.py start_local)
        if job.status == S.NOT_STARTED:
            transition(job, S.STARTING, now)
        if job.status == S.STARTING:
            transition(job, S.PREPARING, now)
        environment = repo.asset_version(job_rules.environment_key(job.body))
        if environment is None:
            self._fail(job, now, f"The environment {job.body['environmentId']} no longer exists.")
            return
        try:
            prepared = self._prepared(job, environment.body, self._build_log(job))
        except EmulatorError as exc:
            self._fail(job, now, exc.message)
            return
        if prepared is not None:
            if getattr(prepared, "built", False):
                events.record(repo, job.workspace_key, kinds.IMAGE_BUILT, job.key, now, image=prepared.image)
            job.image, job.notes = prepared.image, list(prepared.notes)
            transition(job, S.QUEUED, now)

    def _build_log(self, job: Job) -> Path:
        """Azure's name for the image build's log, among the job's artifacts (its workspace may be gone)."""
        job_dir = artifacts.directory(WorkspaceRef.from_key(job.workspace_key), job.name)
        return self.settings.data_dir / job_dir / artifacts.BUILD_LOG

    def _prepared(self, job: Job, environment: dict, build_log: Path):
        """The prepared environment, or None while it builds (in a worker thread, never in the loop)."""
        future = self.preparing.get(job.key)
        if future is None:
            quick = self.cached(environment)
            if quick is not None:
                return quick
            self.preparing[job.key] = self.pool.submit(self._build, environment, build_log)
            return None
        if not future.done():
            return None
        del self.preparing[job.key]
        return future.result()

    def _build(self, environment: dict, build_log: Path):
        # among the job's artifacts, where another job's output may have planted a link: none is followed
        with confined.appending(self.settings.data_dir, build_log.relative_to(self.settings.data_dir),
                                mode=0o644) as out:
            def progress(line: str) -> None:
                out.write(line + "\n")
                out.flush()
            return self.prepare(environment, progress)

    @staticmethod
    def _fail(job: Job, now: datetime, message: str) -> None:
        job.error = {"code": "UserError", "message": message}
        transition(job, S.FAILED, now, message)

    def active_attempts(self, repo: Repository) -> dict[str, int]:
        """Job tag → the attempt whose containers may run (the sweep removes every other job container)."""
        live = repo.jobs_in((S.QUEUED.value, S.RUNNING.value))
        return {job_tag(j.key): j.attempt for j in live if j.dispatched_at is not None}
