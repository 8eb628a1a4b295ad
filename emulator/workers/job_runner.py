"""Waits for one job attempt's container on a node: its end, its exit status, the tail of its log; and watches
it meanwhile against the bounds its VM size does not set (domain/jobs/limits.py), stopping it past one.

The container writes its output straight into the job's log file (mounted at LOG) and its command's exit
status into a file as its shell leaves (see `capture`), so the node knows the end at once, not after the
engine has torn the container down, and the engine copies no log line. Nothing here knows Celery or the
store: the caller says where the files are and what to do at the end, and gets the outcome back.
"""

import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from concurrent.futures import TimeoutError as Pending
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

from emulator.dispatch.job_container import recorded, tail
from emulator.domain.jobs import limits as rules
from emulator.errors import EmulatorError
from emulator.runtime.base import Containers, Exit, Observed
from emulator.workers import disk_use, pids_events

log = logging.getLogger("amlemu.node")
POLL_SECONDS = 0.02  # how often the exit file is looked for while the command runs
WATCH_SECONDS = 1.0  # how often the container's processes are counted (a few ms of the engine's time)


@dataclass(frozen=True)
class Limits:
    """What the watch holds the container to: None for a bound not watched."""
    pids: int | None = None
    pids_sustain_seconds: float = 5.0
    disk_bytes: int | None = None
    disk_check_seconds: float = 5.0
    data_dir: Path = Path("/")
    written: tuple[str, ...] = ()  # the job's writable files and folders, relative to data_dir
    layer: Path | None = None  # its container's writable layer, where the node sees it
    cgroup_root: Path | None = None  # the host's cgroup file system, where the node sees it (refused forks)


@dataclass(frozen=True)
class Outcome:
    exit_code: int
    oom_killed: bool
    log_tail: str
    limit: dict | None = None  # the bound it went past and was stopped at (Breach.to_report)

    @property
    def succeeded(self) -> bool:
        return self.exit_code == 0 and not self.oom_killed and self.limit is None


def at_once(fn: Callable[..., object], *args) -> object:
    """The default `later`: do it now."""
    return fn(*args)


def _engine_end(runtime: Containers, container_id: str) -> "Future[Exit]":
    """The engine's word on the end, for a shell killed before it could write (OOM, a kill from outside)."""
    end: Future[Exit] = Future()

    def wait() -> None:
        try:
            end.set_result(runtime.wait(container_id))
        except Exception as exc:  # noqa: BLE001 (handed to whoever waits)
            end.set_exception(exc)

    threading.Thread(target=wait, name="engine-wait", daemon=True).start()
    return end


@dataclass
class _Watch:
    """The watch's thread and what it found; `ended` stops it."""
    ended: threading.Event = field(default_factory=threading.Event)
    breaches: list[rules.Breach] = field(default_factory=list)
    refused: bool = False  # the kernel refused the job a fork at its pids limit, as the watch saw


def _processes(runtime: Containers, container_id: str) -> int | None:
    try:
        return runtime.processes(container_id)
    except EmulatorError:  # an engine hiccup: no sample this time
        return None


def _disk_used(limits: Limits) -> int:
    try:
        return disk_use.bytes_used(limits.data_dir, limits.written, [limits.layer] if limits.layer else [])
    except OSError as exc:
        log.warning("could not measure a job's disk use: %s", exc)
        return 0


def _watching(runtime: Containers, container_id: str, limits: Limits, watch: _Watch,
              clock: Callable[[], float]) -> None:
    """Sample until the container ends; past a bound, note the breach, then kill the container (its end follows)."""
    pids, next_disk = rules.PidsWatch(), clock() + limits.disk_check_seconds
    while not watch.ended.wait(WATCH_SECONDS):
        breach = None
        if limits.pids:
            refused = pids_events.refused_forks(limits.cgroup_root, container_id) if limits.cgroup_root else None
            watch.refused = watch.refused or bool(refused)
            pids, breach = rules.watch_pids(pids, _processes(runtime, container_id), refused, limits.pids, clock(),
                                            limits.pids_sustain_seconds)
        if breach is None and limits.disk_bytes and clock() >= next_disk:
            started = clock()
            breach = rules.check_disk(_disk_used(limits), limits.disk_bytes)
            next_disk = rules.next_disk_check(clock(), limits.disk_check_seconds, clock() - started)
        if breach is not None:
            log.warning("%s went past its %s limit (%d used of %d): stopped", container_id[:12], breach.kind,
                        breach.used, breach.limit)
            watch.breaches.append(breach)
            runtime.signal(container_id, "SIGKILL")
            return


def _watch(runtime: Containers, container_id: str, limits: Limits | None,
           clock: Callable[[], float] = time.monotonic) -> _Watch:
    watch = _Watch()
    if limits is not None and (limits.pids or limits.disk_bytes):
        threading.Thread(target=_watching, args=(runtime, container_id, limits, watch, clock), name="job-watch",
                         daemon=True).start()
    return watch


def run(runtime: Containers, container: Observed, log_file: Path, exit_file: Path,
        on_ended: Callable[[Outcome], None] = lambda _: None,
        later: Callable[..., object] = at_once, memory_limited: bool = False,
        discard: Callable[[], object] | None = None, limits: Limits | None = None) -> Outcome:
    """Wait for a started container's command to end (`exit_file` and `log_file` as the node sees them).

    `on_ended` hears the outcome before the container is removed, and `later` runs the removal (at once
    unless told otherwise; `discard`, when given, instead of a plain removal): removal takes a fifth of a
    second the next job need not wait for. A container left behind by a crash in between belongs to no
    current attempt, and the controller sweeps it. `limits`: the bounds it is watched against meanwhile."""
    watch = _watch(runtime, container.id, limits)
    try:
        engine = _engine_end(runtime, container.id)
        while (end := recorded(exit_file)) is None:
            try:
                end = engine.result(timeout=POLL_SECONDS)
                break
            except Pending:
                continue
        watch.ended.set()
        breach = watch.breaches[0].to_report() if watch.breaches else None
        if breach is None and end.code != 0 and limits and limits.pids and (watch.refused or end.refused_forks):
            # A fork bomb whose own shell could not fork its next command ends before the watch stops it: its
            # failure still names the limit its forks met, not only the exit code.
            breach = rules.Breach(rules.PIDS, limits.pids, limits.pids, stopped=False).to_report()
        # The engine's OOMKilled flag can come late; a SIGKILL nobody sent under a memory limit is the kernel's
        # (the watch sends one past another bound, and says so).
        oom = end.oom_killed or (end.code == 137 and memory_limited and breach is None)
        outcome = Outcome(end.code, oom, tail(log_file), breach)
        on_ended(outcome)
        return outcome
    finally:
        watch.ended.set()
        later(discard or partial(runtime.remove, container.id))
