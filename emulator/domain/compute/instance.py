"""Compute instances: Azure's state machine, the last operation, idle shutdown and job slots.

Pure: the clock comes in as `now`; durations come in as seconds already scaled by the caller where the time
scale applies.
"""

from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum

from emulator.domain import durations
from emulator.errors import InvalidTransition, ValidationFailed

IDLE_MIN_SECONDS, IDLE_MAX_SECONDS = 15 * 60.0, 3 * 86400.0  # Azure's allowed idle shutdown range
IDLE_TARGET = "properties.properties.idleTimeBeforeShutdown"


class InstanceState(StrEnum):
    CREATING = "Creating"
    CREATE_FAILED = "CreateFailed"
    DELETING = "Deleting"
    RUNNING = "Running"
    RESTARTING = "Restarting"
    JOB_RUNNING = "JobRunning"
    STARTING = "Starting"
    STOPPED = "Stopped"
    STOPPING = "Stopping"
    UNUSABLE = "Unusable"


class Trigger(StrEnum):
    USER = "User"
    SCHEDULE = "Schedule"
    IDLE_SHUTDOWN = "IdleShutdown"


S = InstanceState
UP = frozenset({S.RUNNING, S.JOB_RUNNING})
# While its VM is allocated, from asked for (Creating, Starting) until stopped: what Azure bills. Stopped, failed,
# unusable or being deleted: no VM is billed.
BILLED = frozenset({S.CREATING, S.STARTING, S.RESTARTING, S.RUNNING, S.JOB_RUNNING, S.STOPPING})
IN_PROGRESS = frozenset({S.CREATING, S.STARTING, S.STOPPING, S.RESTARTING, S.DELETING})
# What each operation moves through, where it ends, and what its failure is called and leaves.
_DURING = {"Create": S.CREATING, "Start": S.STARTING, "Stop": S.STOPPING, "Restart": S.RESTARTING,
           "Delete": S.DELETING}
_DONE = {"Create": S.RUNNING, "Start": S.RUNNING, "Stop": S.STOPPED, "Restart": S.RUNNING, "Delete": S.DELETING}
_FAILED = {"Create": ("CreateFailed", S.CREATE_FAILED), "Start": ("StartFailed", S.UNUSABLE),
           "Stop": ("StopFailed", S.UNUSABLE), "Restart": ("RestartFailed", S.UNUSABLE),
           "Delete": ("DeleteFailed", S.UNUSABLE)}
# The states an operation may begin from.
_FROM = {"Start": frozenset({S.STOPPED, S.UNUSABLE}), "Stop": UP | {S.UNUSABLE}, "Restart": UP | {S.UNUSABLE},
         "Delete": frozenset(S) - {S.DELETING}}


@dataclass(frozen=True)
class LastOperation:
    name: str  # Create, Start, Stop, Restart, Delete
    time: datetime
    status: str  # InProgress, Succeeded, or <name>Failed
    trigger: Trigger

    def to_arm(self) -> dict:
        return {"operationName": self.name, "operationTime": self.time.isoformat().replace("+00:00", "Z"),
                "operationStatus": self.status, "operationTrigger": self.trigger.value}

    def to_row(self) -> dict:
        return {"name": self.name, "time": self.time.isoformat(), "status": self.status,
                "trigger": self.trigger.value}

    @classmethod
    def from_row(cls, row: dict) -> "LastOperation":
        return cls(row["name"], datetime.fromisoformat(row["time"]), row["status"], Trigger(row["trigger"]))


def create(now: datetime) -> tuple[InstanceState, LastOperation]:
    return S.CREATING, LastOperation("Create", now, "InProgress", Trigger.USER)


def begin(action: str, state: InstanceState, trigger: Trigger, now: datetime,
          name: str = "the compute instance") -> tuple[InstanceState, LastOperation] | None:
    """Begin `action` from `state`. A user's request the state forbids is refused; a schedule's or idle
    shutdown's is dropped (None), as there is nothing for it to do."""
    if state in _FROM[action]:
        return _DURING[action], LastOperation(action, now, "InProgress", trigger)
    if trigger != Trigger.USER:
        return None
    if state in IN_PROGRESS:
        raise InvalidTransition(f"Compute instance '{name}' is {state.value}; wait for the current operation to "
                                f"finish before asking to {action.lower()} it.", target="computeName")
    hint = {"Start": "it is already running", "Stop": "it is not running",
            "Restart": "only a running instance can be restarted; start it instead"}.get(action, "")
    raise InvalidTransition(f"Compute instance '{name}' is {state.value}; it cannot be "
                            f"{'stopped' if action == 'Stop' else action.lower() + 'ed'}: {hint}.",
                            target="computeName")


def finish(operation: LastOperation, ok: bool, now: datetime) -> tuple[InstanceState, LastOperation]:
    """The operation in progress ended: the state it leaves and the last operation as recorded."""
    if ok:
        return _DONE[operation.name], LastOperation(operation.name, now, "Succeeded", operation.trigger)
    status, state = _FAILED[operation.name]
    return state, LastOperation(operation.name, now, status, operation.trigger)


def with_jobs(state: InstanceState, jobs: int) -> InstanceState:
    """Running ⇄ JobRunning as jobs start and end; nothing else changes with jobs."""
    if state == S.RUNNING and jobs > 0:
        return S.JOB_RUNNING
    if state == S.JOB_RUNNING and jobs == 0:
        return S.RUNNING
    return state


DEFAULT_SLOTS = 1


def admit(queued: int, running: int, slots: int, state: InstanceState) -> int:
    """How many queued jobs (first come first served) may start now on the instance."""
    if state not in UP:
        return 0
    return max(0, min(queued, slots - running))


def billing(before: InstanceState | None, after: InstanceState) -> bool | None:
    """Whether its VM starts (True) or stops (False) being billed as its state goes from `before` (None: a new
    instance) to `after`; None: neither."""
    billed = after in BILLED
    return None if (before in BILLED) == billed else billed


def validate_priority(inner: dict) -> None:
    if inner.get("vmPriority") not in (None, "Dedicated"):
        raise ValidationFailed("Compute instances cannot be low priority: vmPriority must be Dedicated (or left "
                               "out). Use a low-priority compute cluster for spot capacity.",
                               target="properties.properties.vmPriority")


# ---------------------------------------------------------------- idle shutdown


def parse_idle_time(value: object) -> float | None:
    """idleTimeBeforeShutdown (ISO 8601, e.g. PT30M) in seconds, or None when off."""
    if value is None or value == "":
        return None
    seconds = durations.parse_seconds(value, IDLE_TARGET)
    if not IDLE_MIN_SECONDS <= seconds <= IDLE_MAX_SECONDS:
        raise ValidationFailed(f"{IDLE_TARGET} must be between 15 minutes (PT15M) and 3 days (P3D); got {value}.",
                               target=IDLE_TARGET)
    return seconds


@dataclass(frozen=True)
class Activity:
    """What the workstation reports (Jupyter kernels and terminals, SSH sessions) and the jobs on it."""
    kernels: int = 0
    busy_kernels: int = 0
    terminals: int = 0
    ssh_sessions: int = 0
    jobs: int = 0
    last_activity: datetime | None = None

    @property
    def active(self) -> bool:
        # Azure: idle means no kernels, terminals, runs or connections; an open kernel counts as use.
        return bool(self.kernels or self.terminals or self.ssh_sessions or self.jobs)


def idle_since(previous: datetime | None, activity: Activity, now: datetime) -> datetime | None:
    """When the instance became idle, or None while it is in use."""
    if activity.active:
        return None
    if previous is not None:
        return previous
    # Idle from the last use the workstation saw, else from now (the first time it is seen idle).
    return min(now, activity.last_activity) if activity.last_activity is not None else now


def due_for_idle_shutdown(since: datetime | None, idle_seconds: float | None, now: datetime) -> bool:
    return since is not None and idle_seconds is not None and (now - since).total_seconds() >= idle_seconds


def reset_on_change(old_seconds: float | None, new_seconds: float | None, since: datetime | None,
                    now: datetime) -> datetime | None:
    """Azure: a setting shorter than the time already idle starts the idle clock again."""
    if since is None or new_seconds is None:
        return since
    if (now - since).total_seconds() > new_seconds and new_seconds != old_seconds:
        return now
    return since
