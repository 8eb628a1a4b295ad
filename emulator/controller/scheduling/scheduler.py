"""Which queued jobs go to a compute's nodes now, and what a lost node's work becomes: called by the cluster and
instance reconcilers inside their transactions, it decides and records; the caller carries out the Effects."""

import logging
from collections.abc import Callable
from datetime import datetime

from emulator.controller.effects import Effects
from emulator.controller.scheduling.attempts import preempt, requeue
from emulator.controller.specs import job_ranks
from emulator.controller.specs.host_nodes import host_network
from emulator.controller.specs.nodes import detached, on_hosts
from emulator.controller.specs.sandboxes import pool_of
from emulator.dispatch.celery_app import cluster_queue
from emulator.domain.compute import preemption
from emulator.domain.compute.cluster import NodeState
from emulator.domain.ids import WorkspaceRef
from emulator.domain.jobs import artifacts, scheduling
from emulator.domain.jobs import command_job as job_rules
from emulator.domain.jobs.status import TERMINAL, JobStatus
from emulator.domain.registries import ids as registry_ids
from emulator.domain.registries import storage as registry_storage
from emulator.domain.storage import datastores
from emulator.errors import EmulatorError
from emulator.services import computes, registry_assets
from emulator.settings import Settings
from emulator.store.repositories import Repository
from emulator.store.tables import Compute, Job, Node

log = logging.getLogger("amlemu.controller")
S = JobStatus
RESEND_SECONDS = 10.0  # a rank still untaken while a node sat idle this long is sent again (duplicates are harmless)
STARTING = (S.NOT_STARTED.value, S.STARTING.value, S.PREPARING.value)


class JobScheduler:
    """Job decisions that touch nodes; called by the cluster reconciler inside its transaction."""

    def __init__(self, settings: Settings, host_has_gpus: Callable[[], bool],
                 run_token: Callable[[Job], str] = lambda job: ""):
        """`run_token`: the job's own token for its MLflow tracking (none: the job gets no tracking variables)."""
        self.settings, self.host_has_gpus, self.run_token = settings, host_has_gpus, run_token

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
        # its node is still busy: its container starts now, to be ready when the node is (not on a detached node:
        # the controller cannot lay out files on another machine)
        if ahead and not detached(self.settings, compute):
            effects.stage += sent

    def _send(self, repo: Repository, job: Job, compute: Compute, ranks: list[int], effects: Effects) -> list[dict]:
        ref = WorkspaceRef.of(repo.workspace(job.workspace_key))
        remote = on_hosts(compute)  # its jobs run on the host's network; the sandboxes are on the emulator's engine
        attempts = job_ranks.ranks(job.key, job.name, job.attempt, job.body, ref,
                                computes.spec_of(compute), self.settings, job.image, [*job.notes, *_banner(job), *_said(compute)],
                                code_dir(repo, ref, job), self.host_has_gpus(),
                                sandbox_pool=None if remote else pool_of(self.settings, compute.key),
                                network=host_network(self.settings, compute) if remote else None, remote=remote,
                                run_token=self.run_token(job))
        messages = [a.to_message() for a in attempts if a.rank in ranks]
        effects.current.append((job.key, job.attempt))
        effects.send += [(cluster_queue(compute.key), m) for m in messages]
        if detached(self.settings, compute):
            effects.scopes += messages
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


def _said(compute: Compute) -> list[str]:
    """What a cluster says of itself at the top of its jobs' logs: an attached Kubernetes compute, that it runs on
    the local runtime (domain/compute/kubernetes.py)."""
    note = (compute.body["properties"]["properties"].get("kubernetes") or {}).get("note")
    return [note] if note else []


def code_dir(repo: Repository, ref: WorkspaceRef, job: Job) -> str | None:
    code_id = job.body.get("codeId")
    if not code_id:
        return None
    if registry_ids.is_asset_id(code_id):  # a registry component's code, in the registry's storage
        row = registry_assets.find(repo, registry_ids.asset_ref(code_id, "codes", "codeId"), "codeId")
        registry = registry_ids.owner_of(row.key)
        return artifacts.blob_dir(registry_storage.location(registry, row.body["codeUri"], "codeId"))
    row = repo.asset_version(code_id)
    if row is None:
        raise EmulatorError(f"The code snapshot of job {job.name} ({code_id}) is not in the blob store.")
    return artifacts.blob_dir(datastores.resolve_asset_uri(ref, row.body["codeUri"], "codeId"))


