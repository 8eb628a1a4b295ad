"""Follows one job attempt's container on a node: copy its output to the job's log, wait for the end, report.

Nothing here knows Celery or the store: the caller says where the log goes and what to do once the
container runs, and gets the outcome back.
"""

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from emulator.runtime.base import Observed, Runtime

LOG_TAIL_LINES = 30


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


def run(runtime: Runtime, container: Observed, log_file: Path,
        on_ended: Callable[[Outcome], None] = lambda _: None,
        later: Callable[..., object] = at_once, memory_limited: bool = False) -> Outcome:
    """Follow a started container to its end; its stdout and stderr are appended to `log_file` as they come.

    `on_ended` hears the outcome before the container is removed, and `later` runs the removal (at once
    unless told otherwise): removal takes a fifth of a second the next job need not wait for. A container
    left behind by a crash in between belongs to no current attempt, and the controller sweeps it."""
    try:
        log_file.parent.mkdir(parents=True, exist_ok=True)
        tail: deque[str] = deque(maxlen=LOG_TAIL_LINES)
        with log_file.open("ab") as log:
            pending = b""
            for chunk in runtime.follow(container.id):
                log.write(chunk)
                log.flush()
                *lines, pending = (pending + chunk).split(b"\n")
                tail.extend(line.decode(errors="replace") for line in lines)
            if pending:
                tail.append(pending.decode(errors="replace"))
        end = runtime.wait(container.id)
        # The engine's OOMKilled flag can come late; a SIGKILL nobody sent under a memory limit is the kernel's.
        oom = end.oom_killed or (end.code == 137 and memory_limited)
        outcome = Outcome(end.code, oom, "\n".join(tail))
        on_ended(outcome)
        return outcome
    finally:
        later(runtime.remove, container.id)
