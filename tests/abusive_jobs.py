"""Jobs that abuse their node, for the tests of its limits: Python sources, run only under those limits.

Their sleeps are the abuse's pace inside the job's container, not a test waiting: the tests themselves wait on
the job's end with a deadline (job_runner.run, tests/waiting.py)."""

# Forks without end, each child forking again and retrying when refused, as a fork bomb does; only ever under a
# pids limit. It gives up after two minutes, so a watch that failed fails its test rather than hanging it.
FORK_BOMB = """
import os, time
print("bombing", flush=True)
deadline = time.time() + 120
while time.time() < deadline:
    try:
        os.fork()
    except OSError:
        time.sleep(0.02)
"""


def filler(path: str) -> str:
    """Appends 1 MiB every 50 ms to `path`, 400 MiB at most (a bound in case the watch failed)."""
    return f"""
import time
print("filling", flush=True)
with open({path!r}, "ab") as out:
    for _ in range(400):
        out.write(b"x" * 2**20)
        out.flush()
        time.sleep(0.05)
"""
