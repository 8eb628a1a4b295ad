"""Job status machine with Azure's names and order (DESIGN §4, semantics §1.3).

NotStarted → Starting → Preparing (environment image being built) → Queued (waiting for nodes)
→ Running → Finalizing → Completed | Failed | Canceled, plus CancelRequested on the way to Canceled.
A preempted attempt goes back from Running to Queued.
"""

from enum import StrEnum

from emulator.errors import InvalidTransition


class JobStatus(StrEnum):
    NOT_STARTED = "NotStarted"
    STARTING = "Starting"
    PROVISIONING = "Provisioning"
    PREPARING = "Preparing"
    QUEUED = "Queued"
    RUNNING = "Running"
    FINALIZING = "Finalizing"
    CANCEL_REQUESTED = "CancelRequested"
    COMPLETED = "Completed"
    FAILED = "Failed"
    CANCELED = "Canceled"
    NOT_RESPONDING = "NotResponding"
    PAUSED = "Paused"
    UNKNOWN = "Unknown"


S = JobStatus
TERMINAL = frozenset({S.COMPLETED, S.FAILED, S.CANCELED})

# Where each status may go next. Failed, Canceled and CancelRequested are reachable from every live status.
_NEXT: dict[JobStatus, frozenset[JobStatus]] = {
    S.NOT_STARTED: frozenset({S.STARTING}),
    S.STARTING: frozenset({S.PREPARING, S.QUEUED}),
    S.PREPARING: frozenset({S.QUEUED}),
    S.QUEUED: frozenset({S.RUNNING}),
    S.RUNNING: frozenset({S.FINALIZING, S.QUEUED}),  # Queued again after a preemption
    S.FINALIZING: frozenset({S.COMPLETED}),
    S.CANCEL_REQUESTED: frozenset({S.CANCELED}),
}


def is_terminal(status: JobStatus) -> bool:
    return status in TERMINAL


def advance(current: JobStatus, target: JobStatus) -> JobStatus:
    """The status after moving from `current` to `target`, or InvalidTransition."""
    if current in TERMINAL:
        raise InvalidTransition(f"The job has already ended ({current}); it cannot become {target}.",
                                target="status")
    allowed = _NEXT.get(current, frozenset())
    if target in allowed or target in (S.FAILED, S.CANCELED) or (target == S.CANCEL_REQUESTED and current != target):
        return target
    raise InvalidTransition(f"A job cannot go from {current} to {target}.", target="status")


def reuse(current: JobStatus) -> JobStatus:
    """A pipeline step whose earlier run stands in for it ends Completed before it starts (Azure's reuse)."""
    if current != S.NOT_STARTED:
        raise InvalidTransition(f"Only a job that has not started can reuse an earlier run's outputs; this one is "
                                f"{current}.", target="status")
    return S.COMPLETED


def on_cancel(current: JobStatus) -> JobStatus:
    """What a cancel request does: nothing runs yet → Canceled at once; something runs → CancelRequested
    until its container is gone; an ended job stays as it is (cancelling it is not an error in Azure)."""
    if current in TERMINAL or current == S.CANCEL_REQUESTED:
        return current
    if current in (S.RUNNING, S.FINALIZING):
        return S.CANCEL_REQUESTED
    return S.CANCELED
