"""A gate a job waits at until its test opens it, so a job runs exactly as long as the test needs.

The job makes a FIFO in its ./outputs (kept on the host among the job's artifacts) and blocks reading it;
`release` writes to it once the job is there. A job whose gate is never opened runs until it is stopped.
"""

import errno
import os
from pathlib import Path

from tests.waiting import wait_until

# Shell: wait at the gate (an attempt after a requeue finds the FIFO already made).
WAIT = "{ [ -p outputs/gate ] || mkfifo -m 666 outputs/gate; } && cat outputs/gate"


def release(*outputs: Path, timeout: float = 120.0) -> None:
    """Open the gates of the jobs whose ./outputs are `outputs`, once every one of them is waiting at its gate:
    jobs released together were all past their first part at the same time."""
    writers = []
    try:
        for folder in outputs:
            writers.append(wait_until(lambda fifo=folder / "gate": _writer(fifo), timeout=timeout, interval=0.05,
                                      message=f"the job to wait at {folder / 'gate'}"))
        for fd in writers:
            os.write(fd, b"go\n")
    finally:
        for fd in writers:
            os.close(fd)


def _writer(fifo: Path) -> int | None:
    """A write end of the FIFO, or None while it is not made or nobody reads it yet."""
    try:
        return os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
    except FileNotFoundError:
        return None
    except OSError as exc:
        if exc.errno == errno.ENXIO:  # made, but nobody reads it yet
            return None
        raise
