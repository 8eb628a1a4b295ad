"""Parent jobs and their children (the rules are domain/jobs/children.py's): how the controller drives one parent
in a pass. Generic: what is particular to a kind of parent (a sweep's trials, a pipeline's steps) is its
`Driver`, chosen by `job.driver["kind"]`.

Each pass, for each live parent, in the controller's one transaction:
1. the driver decides (`Plan`): the children to make (name and command-job PUT body), the children to stop, its
   record, whether it will make more, and properties to show on the parent;
2. the children are submitted through services.jobs.put, exactly as a user's jobs are, and marked as the parent's;
   the stopped ones are cancelled as a user's cancel would; the record is written in the same transaction, so a
   controller killed at any moment never makes a child twice nor loses one it recorded;
3. the parent's status rolls up from its children's.
A child that cannot be made (its compute was deleted meanwhile) fails the parent, and its other children are
cancelled.
"""

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Protocol

from emulator.domain.ids import WorkspaceRef
from emulator.domain.jobs import children as rules
from emulator.domain.jobs.status import TERMINAL, JobStatus
from emulator.errors import EmulatorError
from emulator.services import jobs
from emulator.services.reuse import Ask, settle
from emulator.store.repositories import Repository
from emulator.store.tables import Job

S = JobStatus


@dataclass
class Plan:
    make: list[tuple[str, dict]] = field(default_factory=list)  # (child name, its PUT body), in order
    stop: dict[str, str] = field(default_factory=dict)  # child name -> why it is stopped
    record: dict | None = None  # the driver's record, when it changed
    done: bool = False  # no more children will be made
    properties: dict[str, str] = field(default_factory=dict)  # shown in the parent's `properties`
    said: list[str] = field(default_factory=list)  # lines for the parent's log
    reuse: dict[str, Ask] = field(default_factory=dict)  # child name -> its reuse key, for children that may reuse
    error: str | None = None  # why the parent fails, when it does


class Driver(Protocol):
    outcome: rules.Outcome  # how the parent's status rolls up
    log_name: str  # its log among the parent's artifacts (what `jobs.stream` prints)

    def wanted(self, parent: Job, children: Sequence[Job]) -> tuple[str, list[str]] | None:
        """The metric whose logged values it needs, and of which children (job keys); None: none."""

    def decide(self, parent: Job, children: Sequence[Job], series: Mapping[str, list[float]], now: datetime) -> Plan:
        """What to do now; `series`: the values of the wanted metric read this pass, by child key."""


def _make(repo: Repository, ref: WorkspaceRef, parent: Job, name: str, body: dict, now: datetime,
          data_dir: Path | None, outside: Mapping[str, str | None], ask: Ask | None) -> None:
    if repo.job(ref.child_id("jobs", name)) is not None:
        return  # made already: a decision names each child once
    child, _ = jobs.put(repo, ref, name, body, now, data_dir, outside)
    child.parent_key = parent.key
    if ask is not None:
        settle(repo, parent, child, ask, now)


def _fail(repo: Repository, ref: WorkspaceRef, parent: Job, message: str, now: datetime) -> None:
    parent.error = {"code": "UserError", "message": message}
    for child in repo.children(parent.key):
        if S(child.status) not in TERMINAL:
            jobs.cancel(repo, ref, child.name, now, "Its parent job failed.")
    jobs.transition(parent, S.FAILED, now, message)


def _act(repo: Repository, ref: WorkspaceRef, parent: Job, plan: Plan, now: datetime, data_dir: Path | None) -> bool:
    """Carry out the plan; False when the parent failed instead."""
    for name, why in plan.stop.items():
        jobs.cancel(repo, ref, name, now, why)
    outside = (parent.driver or {}).get("outside") or {}
    for name, body in plan.make:
        try:
            with repo.savepoint():
                _make(repo, ref, parent, name, body, now, data_dir, outside, plan.reuse.get(name))
        except EmulatorError as exc:
            _fail(repo, ref, parent, f"Child job {name} could not be submitted: {exc.message}", now)
            return False
    if plan.record is not None:
        parent.driver = plan.record
    if plan.properties:
        parent.body = {**parent.body, "properties": {**parent.body.get("properties", {}), **plan.properties}}
    return True


def drive(repo: Repository, parent: Job, driver: Driver, series: Mapping[str, list[float]], now: datetime,
          data_dir: Path | None) -> Plan:
    """One parent's share of a pass (see the module's docstring); the plan carried out, for its log lines."""
    ref = WorkspaceRef.from_key(parent.workspace_key)
    plan = Plan()
    if parent.status != S.CANCEL_REQUESTED:
        plan = driver.decide(parent, repo.children(parent.key), series, now)
        if parent.status == S.NOT_STARTED:
            jobs.transition(parent, S.RUNNING, now)
        if not _act(repo, ref, parent, plan, now, data_dir):
            return plan
    else:  # cancelled: whatever of it still runs goes (a child made since the cancel, say)
        for child in repo.children(parent.key):
            if S(child.status) not in TERMINAL and child.status != S.CANCEL_REQUESTED:
                jobs.cancel(repo, ref, child.name, now, "Its parent job was cancelled.")
    statuses = [S(child.status) for child in repo.children(parent.key)]
    ended = rules.rolled_up(S(parent.status), statuses, plan.done, driver.outcome)
    if ended == S.FAILED:
        parent.error = {"code": "UserError", "message": plan.error or "No child job completed."}
    if ended is not None:
        jobs.transition(parent, ended, now, parent.error["message"] if ended == S.FAILED else None)
    return plan
