"""Parent jobs, generically: a parent runs nothing itself; its children are ordinary command jobs that the
controller submits through the same path as a user's, and its status follows theirs. A sweep is one (its trials are
its children, sweep.py says which); a pipeline will be another. Pure.

- A parent's machine: NotStarted → Running (once its driver acts) → Completed | Failed | Canceled, with
  CancelRequested on the way to Canceled while children still run.
- Roll-up: once its driver makes no more children and every child has ended, the parent ends: Completed when the
  children's outcome satisfies its rule (ANY: one child completed, as a sweep; ALL: every child, as a pipeline),
  Failed otherwise. A parent cancelled ends Canceled once no child runs.
- Children are named `<parent>_<index>`, as Azure names sweep trials, so the same decision names the same child.
"""

from collections.abc import Sequence
from enum import StrEnum

from emulator.domain.jobs.status import TERMINAL, JobStatus
from emulator.errors import InvalidTransition

S = JobStatus
LIVE_PARENT = (S.NOT_STARTED.value, S.RUNNING.value, S.CANCEL_REQUESTED.value)
_NEXT = {S.NOT_STARTED: {S.RUNNING}, S.RUNNING: {S.COMPLETED}, S.CANCEL_REQUESTED: {S.CANCELED}}


class Outcome(StrEnum):
    ANY_COMPLETED = "any"
    ALL_COMPLETED = "all"


def advance(current: JobStatus, target: JobStatus) -> JobStatus:
    """A parent's status after moving from `current` to `target`, or InvalidTransition."""
    if current in TERMINAL:
        raise InvalidTransition(f"The job has already ended ({current}); it cannot become {target}.", target="status")
    if target in _NEXT.get(current, set()) or target in (S.FAILED, S.CANCELED) or \
            (target == S.CANCEL_REQUESTED and current != target):
        return target
    raise InvalidTransition(f"A parent job cannot go from {current} to {target}.", target="status")


def child_name(parent: str, index: int) -> str:
    return f"{parent}_{index}"


def live(children: Sequence[JobStatus]) -> int:
    return sum(1 for status in children if status not in TERMINAL)


def rolled_up(current: JobStatus, children: Sequence[JobStatus], done: bool, rule: Outcome) -> JobStatus | None:
    """The status the parent ends in now, or None while it goes on. `done`: its driver makes no more children."""
    if current in TERMINAL or live(children):
        return None
    if current == S.CANCEL_REQUESTED:
        return S.CANCELED
    if not done:
        return None
    completed = [status == S.COMPLETED for status in children]
    ok = any(completed) if rule == Outcome.ANY_COMPLETED else bool(completed) and all(completed)
    return S.COMPLETED if ok else S.FAILED
