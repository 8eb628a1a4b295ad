"""Run alone by the outer test: it says the stack is up, then waits to be interrupted."""

import os
import time
from pathlib import Path


def test_waits_for_interruption(amlemu):
    Path(os.environ["AMLEMU_TEST_MARK"]).write_text(amlemu.stack.label)
    time.sleep(600)  # noqa: TID251 (the outer test interrupts the session meanwhile)
