"""Drives jobs from submission to their end.

- NotStarted → Starting → Preparing: the environment image is resolved, or built in a worker thread.
- Queued: `JobScheduler.schedule` (called by the cluster reconciler, inside its transaction) hands the oldest
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
from emulator.controller import launch
from emulator.controller.steps import Steps
from emulator.controller.effects import Effects
from emulator.controller.sandboxes import pool_of
from emulator.domain.jobs import command_job as job_rules
from emulator.domain.jobs import artifacts, scheduling
from emulator.domain.storage import datastores
from emulator.domain.compute import preemption, vm_sizes
from emulator.domain.compute.cluster import ClusterSpec, NodeState
from emulator.domain.ids import WorkspaceRef
from emulator.domain.jobs.status import TERMINAL, JobStatus
from emulator.errors import EmulatorError
from emulator.services import computes
from emulator.services import preemption as preemption_service
from emulator.services.jobs import transition
from emulator.settings import Settings
from emulator.store.repositories import Repository
from emulator.store.tables import Compute, Job, Node
from emulator.dispatch.celery_app import cluster_queue
from emulator.dispatch.protocol import job_tag

log = logging.getLogger("amlemu.controller")
S = JobStatus
RESEND_SECONDS = 10.0  # a rank still untaken while a node sat idle this long is sent again (duplicates are harmless)
STARTING = (S.NOT_STARTED.value, S.STARTING.value, S.PREPARING.value)


def _rank_failed(rank: dict) -> bool:
    return bool(rank.get("error") or rank.get("oom") or rank.get("exit_code") not in (0, None))


def _failure(job: Job, rank: dict, cluster: ClusterSpec, settings: Settings) -> dict:
    spec = job_rules.spec_of(job.body)
    log_name = artifacts.log_name(int(rank.get("rank", 0)), spec.instance_count)
    tail = rank.get("tail") or ""
    if rank.get("error"):
        return {"code": "UserError", "message": f"The job could not run on node {rank.get('node')}: {rank['error']}"}
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


class JobScheduler:
    """Job decisions that touch nodes; called by the cluster reconciler inside its transaction."""

    def __init__(self, settings: Settings, host_has_gpus: Callable[[], bool]):
        self.settings, self.host_has_gpus = settings, host_has_gpus

    def schedule(self, repo: Repository, compute: Compute, nodes: list[Node], now: datetime,
                 effects: Effects) -> tuple[int, int]:
        """Send what nodes will take, first come first served. Returns (nodes wanted by jobs, ranks sent that no
        node has taken yet)."""
        queued = repo.jobs_in((S.QUEUED.value,), compute.key)
        usable = [n for n in nodes if n.notice is None]
        idle = [n for n in usable if n.state == NodeState.IDLE and n.run_id is None]
        busy = sum(n.state in (NodeState.PREPARING, NodeState.RUNNING) for n in usable)
        # A rank nobody took while a node sat idle was lost (its node died holding it): it is sent again.
        lost = any(n.idle_since and (now - n.idle_since).total_seconds() >= RESEND_SECONDS for n in idle)
        pending = 0
        for job in (j for j in queued if j.dispatched_at is not None):
            unclaimed = self._unclaimed(job)
            pending += len(unclaimed)
            if unclaimed and lost and (now - job.dispatched_at).total_seconds() >= RESEND_SECONDS:
                self._send(repo, job, compute, unclaimed, effects)
                job.dispatched_at = now
        unsent = [j for j in queued if j.dispatched_at is None]
        sizes = [job_rules.instance_count(j.body) for j in unsent]
        waiting = 0
        for job, size, admission in zip(unsent, sizes, scheduling.admit(sizes, len(idle), busy, pending), strict=True):
            if admission == scheduling.Admission.WAIT:
                waiting += size
                continue
            self.dispatch(repo, job, compute, now, effects, ahead=admission == scheduling.Admission.AHEAD)
            pending += size
        return pending + waiting, pending

    @staticmethod
    def _unclaimed(job: Job) -> list[int]:
        world = job_rules.instance_count(job.body)
        return [r for r in range(world) if str(r) not in job.ranks]

    def dispatch(self, repo: Repository, job: Job, compute: Compute, now: datetime, effects: Effects,
                 ahead: bool = False) -> None:
        """Send the job's next attempt; `ahead`: its node is still busy, so its container starts now."""
        job.attempt = max(job.attempt, 1)  # a requeue has counted the next attempt already
        job.dispatched_at, job.ranks, job.modified_at = now, {}, now
        sent = self._send(repo, job, compute, self._unclaimed(job), effects)
        if ahead:  # its node is still busy: its container starts now, to be ready when the node is
            effects.stage += sent

    def _send(self, repo: Repository, job: Job, compute: Compute, ranks: list[int], effects: Effects) -> list[dict]:
        ref = WorkspaceRef.of(repo.workspace(job.workspace_key))
        attempts = launch.ranks(job.key, job.name, job.attempt, job.body, ref,
                                computes.spec_of(compute), self.settings, job.image, [*job.notes, *_banner(job)],
                                code_dir(repo, ref, job), self.host_has_gpus(),
                                sandbox_pool=pool_of(self.settings, compute.key))
        messages = [a.to_message() for a in attempts if a.rank in ranks]
        effects.current.append((job.key, job.attempt))
        effects.send += [(cluster_queue(compute.key), m) for m in messages]
        return messages

    def node_lost(self, repo: Repository, compute: Compute, node: Node, now: datetime, effects: Effects,
                  preempted: preemption.Policy | None = None) -> None:
        """A node went away (died, was removed, was preempted under `preempted`): the job it ran goes back to the
        queue (or fails), and every rank sent but not yet claimed is sent again, since the node may have taken
        one from the queue as it died (duplicates are harmless: a rank is claimed once)."""
        for job in repo.jobs_in((S.QUEUED.value,), compute.key):
            if job.dispatched_at not in (None, now) and (unclaimed := self._unclaimed(job)):
                self._send(repo, job, compute, unclaimed, effects)
                job.dispatched_at = now
        if not node.run_id:
            return
        job = repo.job(f"{compute.workspace_key}/jobs/{node.run_id}")
        node.run_id = None
        if job is None or S(job.status) in TERMINAL or job.dispatched_at is None:
            return
        if job.status == S.CANCEL_REQUESTED:
            ranks = {r: {**v, "state": "ended"} if v.get("node") == node.node_id else v for r, v in job.ranks.items()}
            job.ranks = ranks
            return
        if preempted is not None:
            preempt(repo, job, node.node_id, now, effects, preempted)
            return
        log.warning("node %s was lost running %s attempt %s: back to the queue", node.node_id, job.name, job.attempt)
        requeue(repo, job, now, effects, f"Node {node.node_id} was lost while running attempt {job.attempt}; "
                                          "the job goes back to the queue.")


def _banner(job: Job) -> list[str]:
    """The first line of a rerun's log: which attempt it is and why there is one (a preemption, a lost node)."""
    if job.attempt <= 1:
        return []
    why = next((h["message"] for h in reversed(job.history) if h.get("attempt") == job.attempt and h.get("message")),
               "")
    return [f"amlemu: attempt {job.attempt}. {why}".rstrip()]


def _release(repo: Repository, job: Job, now: datetime, effects: Effects) -> None:
    """The job's current attempt is over: nothing of it may start, its containers go, its nodes are free."""
    effects.clear.append(job.key)
    effects.stop_jobs.append(job.key)
    for node in repo.nodes(job.compute_key):
        if node.run_id == job.name:  # the attempt's other ranks stop with it
            node.run_id = None
            if node.state == NodeState.RUNNING:
                node.state, node.state_changed_at, node.idle_since = NodeState.IDLE.value, now, now
    job.dispatched_at, job.ranks = None, {}


def requeue(repo: Repository, job: Job, now: datetime, effects: Effects, message: str, **entry) -> None:
    """Back to Queued as the next attempt, which the scheduler dispatches like a new job."""
    _release(repo, job, now, effects)
    job.attempt += 1
    if job.status != S.QUEUED:
        transition(job, S.QUEUED, now, message, **entry)
    else:
        job.history = [*job.history, {"status": S.QUEUED.value, "time": now.isoformat(), "attempt": job.attempt,
                                      "message": message, **entry}]


def abandon(repo: Repository, job: Job, now: datetime, effects: Effects, message: str) -> None:
    """The job's compute went away under it (an instance stopped or deleted): it fails, saying so."""
    _release(repo, job, now, effects)
    job.error = {"code": "ComputeUnavailable", "message": message}
    transition(job, S.FAILED, now, message)


def preempt(repo: Repository, job: Job, node_id: str, now: datetime, effects: Effects,
            policy: preemption.Policy) -> None:
    """The job's node was preempted: the next attempt waits in the queue, or the job fails, as chosen."""
    warning = f"Low priority compute preemption warning: node {node_id} was preempted during attempt {job.attempt}."
    if preemption.outcome(job.body.get("properties"), policy) == preemption.FAIL:
        _release(repo, job, now, effects)
        job.error = {"code": "PreemptionError", "message": f"{preemption.FAILURE_MESSAGE} (node {node_id})."}
        transition(job, S.FAILED, now, job.error["message"], warning=warning)
    else:
        log.info("%s: node %s preempted during attempt %s; back to the queue", job.name, node_id, job.attempt)
        requeue(repo, job, now, effects, f"{warning} The job goes back to the queue.", warning=warning)


def code_dir(repo: Repository, ref: WorkspaceRef, job: Job) -> str | None:
    code_id = job.body.get("codeId")
    if not code_id:
        return None
    row = repo.asset_version(code_id)
    if row is None:
        raise EmulatorError(f"The code snapshot of job {job.name} ({code_id}) is not in the blob store.")
    return artifacts.blob_dir(datastores.resolve_asset_uri(ref, row.body["codeUri"], "codeId"))


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
            self._bind(job, node, rank, now)
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
        _release(repo, job, now, effects)
        job.ranks = {str(event["rank"]): {**event, "state": "ended"}}
        message = (f"Attempt {event['attempt']} ended successfully as its node was lost; its result stands and "
                   f"attempt {job.attempt} is not needed.")
        transition(job, S.RUNNING, now, message)
        transition(job, S.FINALIZING, now)
        return True

    @staticmethod
    def _bind(job: Job, node: Node | None, rank: str, now: datetime) -> None:
        job.ranks = {**job.ranks, rank: {"node": node.node_id if node else None, "state": "claimed", "rank": rank}}
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
        for job in repo.jobs_in((S.QUEUED.value,)):
            if repo.compute(job.compute_key) is None:
                self._fail(job, now, f"The compute cluster {job.body.get('computeId')} was deleted.")
        for job in repo.jobs_in((S.FINALIZING.value,)):
            transition(job, S.COMPLETED, now)
        for job in repo.jobs_in((S.CANCEL_REQUESTED.value,)):
            effects.clear.append(job.key)
            effects.stop_jobs.append(job.key)
            if not any(r.get("state") in ("claimed", "running") for r in job.ranks.values()):
                transition(job, S.CANCELED, now)
        for job in repo.jobs_in(tuple(s.value for s in TERMINAL), dispatched=True):
            effects.clear.append(job.key)  # ended or cancelled with an attempt out: nothing of it may start
            effects.stop_jobs.append(job.key)
            job.dispatched_at = None

    def _advance_alone(self, repo: Repository, job: Job, now: datetime) -> None:
        """`_advance` in a savepoint: what it changed before raising is undone, the rest of the pass kept."""
        with repo.session.begin_nested():
            self._advance(repo, job, now)

    def _advance(self, repo: Repository, job: Job, now: datetime) -> None:
        if job.status == S.NOT_STARTED:
            transition(job, S.STARTING, now)
        if job.status == S.STARTING:
            transition(job, S.PREPARING, now)
        environment = repo.asset_version(job.body["environmentId"])
        if environment is None:
            self._fail(job, now, f"The environment {job.body['environmentId']} no longer exists.")
            return
        try:
            prepared = self._prepared(job, environment.body, self._build_log(job))
        except EmulatorError as exc:
            self._fail(job, now, exc.message)
            return
        if prepared is not None:
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
