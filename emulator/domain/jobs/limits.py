"""When a job has gone past the bounds its node puts on it, and how its failure then reads. Pure: the node feeds
samples and the clock (workers/job_runner.py watches the container), the controller words the error.

A fork bomb never ends by itself: its forks fail (EAGAIN) at the container's pids limit and it goes on trying. A
job that sits at the limit for a few seconds is stopped; one that only touches it (a pool of threads that grows
until it is refused, then works) is not. Disk has no limit the engine enforces on every storage driver, so the
node measures what the job wrote and stops it past its limit.
"""

from dataclasses import dataclass

PIDS, DISK = "pids", "disk"
# A fork bomb's count dips as refused children exit: "at the limit" leaves it this share of room.
AT_LIMIT_SLACK = 0.02
# A disk measurement costs a walk of the job's files: the next one waits at least this many times as long, but
# never more than DISK_CHECK_MAX_FACTOR intervals (a job that makes its walk slow with many files must not win
# itself minutes of unwatched writing).
DISK_CHECK_COST_FACTOR = 10.0
DISK_CHECK_MAX_FACTOR = 12.0
GIB = 2**30


@dataclass(frozen=True)
class Breach:
    """A limit the job went past: which, its value, and what the job used (processes, or bytes)."""
    kind: str
    limit: int
    used: int
    stopped: bool = True  # stopped by its node; False: it ended by itself after meeting the limit

    def to_report(self) -> dict:
        return {"kind": self.kind, "limit": self.limit, "used": self.used, "stopped": self.stopped}


@dataclass(frozen=True)
class PidsWatch:
    """Since when (the clock's seconds) the job has pressed on its pids limit, or None; the refused forks counted
    at the last sample (None: not read)."""
    since: float | None = None
    refused: int | None = None


def at_pids_limit(current: int, limit: int) -> bool:
    return current >= limit - max(1, int(limit * AT_LIMIT_SLACK))


def watch_pids(watch: PidsWatch, current: int | None, refused: int | None, limit: int, now: float,
               sustain_seconds: float) -> tuple[PidsWatch, Breach | None]:
    """The watch after a sample, and a breach once the job has pressed on its limit `sustain_seconds`.

    Where the kernel's count of refused forks is read (`refused`), pressing is that count growing from one sample
    to the next: a fork bomb's grows by hundreds a second while its process count swings far below the limit as
    refused children exit; a pool of threads that grew until it was refused adds one and works on at the limit.
    Where it is not, a process count at the limit is all there is (`current`; None with neither: no sample, which
    breaks no streak and extends none)."""
    if refused is not None:
        pressing = watch.refused is not None and refused > watch.refused
    elif current is not None:
        pressing = at_pids_limit(current, limit)
    else:
        return watch, None
    if not pressing:
        return PidsWatch(refused=refused), None
    since = now if watch.since is None else watch.since
    used = current if current is not None else limit
    return PidsWatch(since, refused), Breach(PIDS, limit, used) if now - since >= sustain_seconds else None


def check_disk(used_bytes: int, limit_bytes: int) -> Breach | None:
    return Breach(DISK, limit_bytes, used_bytes) if used_bytes > limit_bytes else None


def next_disk_check(now: float, interval_seconds: float, walk_seconds: float) -> float:
    """When to measure again: after the interval, or later when a measurement takes long (many files), so that
    watching costs the node a tenth of its time at most, up to a bound."""
    return now + min(max(interval_seconds, walk_seconds * DISK_CHECK_COST_FACTOR),
                     interval_seconds * DISK_CHECK_MAX_FACTOR)


def _size(value: int) -> str:
    """Bytes in GiB, or in MiB below one GiB (a small limit a test sets)."""
    unit, name = (GIB, "GiB") if value >= GIB else (2**20, "MiB")
    return f"{f'{value / unit:.2f}'.rstrip('0').rstrip('.')} {name}"


def failure(breach: dict, tail: str) -> dict:
    """The job's error for a breach its node reported, in the shape of the out-of-memory one (innerError
    names the limit, as Azure's OutOfMemory does), with the setting that raises it."""
    if breach["kind"] == PIDS:
        how = ("for several seconds and was stopped" if breach.get("stopped", True)
               else "and failed when its forks were refused")
        message = (f"The job reached its limit of {breach['limit']} processes and threads (AMLEMU_JOB_PIDS_LIMIT) "
                   f"{how}: a process that forks without end? Raise AMLEMU_JOB_PIDS_LIMIT if the job needs more.")
        code = "ProcessLimitExceeded"
    else:
        message = (f"The job's disk use reached its limit of {_size(breach['limit'])} (AMLEMU_JOB_DISK_LIMIT_GB) "
                   f"with {_size(breach['used'])} written (its working directory, outputs, logs and "
                   "container files) and it was stopped. Write less, or raise AMLEMU_JOB_DISK_LIMIT_GB.")
        code = "DiskLimitExceeded"
    return {"code": "UserError", "innerError": {"code": code, "limit": breach["limit"], "used": breach["used"]},
            "message": f"{message}\n{tail}".rstrip()}
