"""Run alone by the outer test: it says the stack is up, then waits for the signal that interrupts the session."""

import os
import signal
from pathlib import Path


def test_waits_for_interruption(amlemu):
    Path(os.environ["AMLEMU_TEST_MARK"]).write_text(amlemu.stack.label)
    signal.pause()  # until the outer test's SIGINT (or SIGKILL): no fixed time
