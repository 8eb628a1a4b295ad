"""What becomes of a job's current attempt when it ends early: back to the queue as the next attempt, failed
because its compute went away, or either under a preemption, as the job's policy says."""

import logging
from datetime import datetime

from emulator.controller.effects import Effects
from emulator.domain import events as kinds
from emulator.domain.compute import preemption
from emulator.domain.compute.cluster import NodeState
from emulator.domain.jobs.status import JobStatus
from emulator.services import events
from emulator.services.jobs import transition
from emulator.store.repositories import Repository
from emulator.store.tables import Job

log = logging.getLogger("amlemu.controller")
S = JobStatus
RESEND_SECONDS = 10.0  # a rank still untaken while a node sat idle this long is sent again (duplicates are harmless)
STARTING = (S.NOT_STARTED.value, S.STARTING.value, S.PREPARING.value)


def release(repo: Repository, job: Job, now: datetime, effects: Effects) -> None:
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
    release(repo, job, now, effects)
    job.attempt += 1
    events.record(repo, job.workspace_key, kinds.JOB_REQUEUED, job.key, now, attempt=job.attempt, reason=message,
                  preempted=bool(entry.get("warning")) or None, compute=job.compute_key)
    if job.status != S.QUEUED:
        transition(job, S.QUEUED, now, message, **entry)
    else:
        job.history = [*job.history, {"status": S.QUEUED.value, "time": now.isoformat(), "attempt": job.attempt,
                                      "message": message, **entry}]


def abandon(repo: Repository, job: Job, now: datetime, effects: Effects, message: str) -> None:
    """The job's compute went away under it (an instance stopped or deleted): it fails, saying so."""
    release(repo, job, now, effects)
    job.error = {"code": "ComputeUnavailable", "message": message}
    transition(job, S.FAILED, now, message)


def preempt(repo: Repository, job: Job, node_id: str, now: datetime, effects: Effects,
            policy: preemption.Policy) -> None:
    """The job's node was preempted: the next attempt waits in the queue, or the job fails, as chosen."""
    warning = f"Low priority compute preemption warning: node {node_id} was preempted during attempt {job.attempt}."
    if preemption.outcome(job.body.get("properties"), policy) == preemption.FAIL:
        release(repo, job, now, effects)
        job.error = {"code": "PreemptionError", "message": f"{preemption.FAILURE_MESSAGE} (node {node_id})."}
        transition(job, S.FAILED, now, job.error["message"], warning=warning)
    else:
        log.info("%s: node %s preempted during attempt %s; back to the queue", job.name, node_id, job.attempt)
        requeue(repo, job, now, effects, f"{warning} The job goes back to the queue.", warning=warning)


