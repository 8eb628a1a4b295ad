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


def release(outputs: Path, timeout: float = 120.0) -> None:
    """Open the gate of the job whose ./outputs is `outputs`, once the job is waiting at it."""
    fifo = outputs / "gate"

    def writer() -> int | None:
        try:
            return os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
        except FileNotFoundError:
            return None
        except OSError as exc:
            if exc.errno == errno.ENXIO:  # made, but nobody reads it yet
                return None
            raise

    fd = wait_until(writer, timeout=timeout, interval=0.05, message=f"the job to wait at {fifo}")
    try:
        os.write(fd, b"go\n")
    finally:
        os.close(fd)
