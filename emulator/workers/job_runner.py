"""Waits for one job attempt's container on a node: its end, its exit status, the tail of its log.

The container writes its output straight into the job's log file (mounted at LOG) and its command's exit
status into a file as its shell leaves (see `capture`), so the node knows the end at once, not after the
engine has torn the container down, and the engine copies no log line. Nothing here knows Celery or the
store: the caller says where the files are and what to do at the end, and gets the outcome back.
"""

import os
import threading
from collections.abc import Callable
from concurrent.futures import Future
from concurrent.futures import TimeoutError as Pending
from dataclasses import dataclass
from functools import partial
from pathlib import Path

from emulator import confined
from emulator.runtime.base import Exit, Observed, Runtime

LOG = "/mnt/azureml/logs/std_log.txt"  # where a job container sees its log file
LOG_TAIL_LINES = 30
POLL_SECONDS = 0.02  # how often the exit file is looked for while the command runs


@dataclass(frozen=True)
class Outcome:
    exit_code: int
    oom_killed: bool
    log_tail: str

    @property
    def succeeded(self) -> bool:
        return self.exit_code == 0 and not self.oom_killed


def capture(exit_file: str) -> str:
    """The shell lines a job's command follows: its output appended to LOG, and its exit status written to
    `exit_file` (a path in the container) as the shell leaves, however it leaves short of being killed."""
    return f"exec >>{LOG} 2>&1; trap 'echo $? > {exit_file}' EXIT"


def at_once(fn: Callable[..., object], *args) -> object:
    """The default `later`: do it now."""
    return fn(*args)


def recorded(exit_file: Path) -> Exit | None:
    """The exit status the shell wrote; the job could swap the file for a link, which is not followed."""
    try:
        return Exit(code=int(confined.read_small(exit_file) or b""), oom_killed=False)
    except ValueError:  # not yet there, or being written
        return None


def _engine_end(runtime: Runtime, container_id: str) -> "Future[Exit]":
    """The engine's word on the end, for a shell killed before it could write (OOM, a kill from outside)."""
    end: Future[Exit] = Future()

    def wait() -> None:
        try:
            end.set_result(runtime.wait(container_id))
        except Exception as exc:  # noqa: BLE001 (handed to whoever waits)
            end.set_exception(exc)

    threading.Thread(target=wait, name="engine-wait", daemon=True).start()
    return end


def tail(log_file: Path, lines: int = LOG_TAIL_LINES, window: int = 64 * 1024) -> str:
    """The last `lines` lines of the log (read from its end: a log may be large). A log its writer swapped for
    a link is not followed."""
    try:
        with open(os.open(log_file, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC), "rb") as log:
            log.seek(max(0, log.seek(0, os.SEEK_END) - window))
            text = log.read().decode(errors="replace")
    except OSError:  # not there yet, or a link
        return ""
    return "\n".join(text.rstrip("\n").splitlines()[-lines:])


def run(runtime: Runtime, container: Observed, log_file: Path, exit_file: Path,
        on_ended: Callable[[Outcome], None] = lambda _: None,
        later: Callable[..., object] = at_once, memory_limited: bool = False,
        discard: Callable[[], object] | None = None) -> Outcome:
    """Wait for a started container's command to end (`exit_file` and `log_file` as the node sees them).

    `on_ended` hears the outcome before the container is removed, and `later` runs the removal (at once
    unless told otherwise; `discard`, when given, instead of a plain removal): removal takes a fifth of a
    second the next job need not wait for. A container left behind by a crash in between belongs to no
    current attempt, and the controller sweeps it."""
    try:
        engine = _engine_end(runtime, container.id)
        while (end := recorded(exit_file)) is None:
            try:
                end = engine.result(timeout=POLL_SECONDS)
                break
            except Pending:
                continue
        # The engine's OOMKilled flag can come late; a SIGKILL nobody sent under a memory limit is the kernel's.
        oom = end.oom_killed or (end.code == 137 and memory_limited)
        outcome = Outcome(end.code, oom, tail(log_file))
        on_ended(outcome)
        return outcome
    finally:
        later(discard or partial(runtime.remove, container.id))
