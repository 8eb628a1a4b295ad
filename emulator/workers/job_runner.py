"""Waits for one job attempt's container on a node: its end, its exit status, the tail of its log.

The container writes its output straight into the job's log file (mounted at LOG) and its command's exit
status into a file as its shell leaves (see `capture`), so the node knows the end at once, not after the
engine has torn the container down, and the engine copies no log line. Nothing here knows Celery or the
store: the caller says where the files are and what to do at the end, and gets the outcome back.
"""

import threading
from collections.abc import Callable
from concurrent.futures import Future
from concurrent.futures import TimeoutError as Pending
from dataclasses import dataclass
from functools import partial
from pathlib import Path

from emulator.dispatch.job_container import recorded, tail
from emulator.runtime.base import Containers, Exit, Observed

POLL_SECONDS = 0.02  # how often the exit file is looked for while the command runs


@dataclass(frozen=True)
class Outcome:
    exit_code: int
    oom_killed: bool
    log_tail: str

    @property
    def succeeded(self) -> bool:
        return self.exit_code == 0 and not self.oom_killed


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


def run(runtime: Containers, container: Observed, log_file: Path, exit_file: Path,
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
