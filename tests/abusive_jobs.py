"""Jobs that abuse their node, for the tests of its limits: Python sources, run only under those limits.

Their sleeps are the abuse's pace inside the job's container, not a test waiting. The fork bomb tries each refused
fork again, as a real one does (the node tells a fork bomb by the forks the kernel keeps refusing it; a job that was
refused once and then holds its slots quietly is left alone), with an alarm as a bound, so that a watch that failed
fails its test rather than hanging it. The tests themselves wait on the job's end with a deadline (job_runner.run,
tests/waiting.py)."""

# Forks without end, each child forking again; refused at the pids limit, each process tries again.
FORK_BOMB = """
import os, signal, time
print("bombing", flush=True)
signal.alarm(120)
while True:
    try:
        if os.fork() == 0:
            signal.alarm(120)  # a child keeps no alarm of its parent's
    except OSError:
        time.sleep(0.02)
"""


def filler(path: str) -> str:
    """Appends 1 MiB every 50 ms to `path`, 400 MiB at most (a bound in case the watch failed). Its pace is the job's
    own, inside its container: test_job_runner checks the watch stops it mid-way, which needs a writer that takes time."""
    return f"""
import time
print("filling", flush=True)
with open({path!r}, "ab") as out:
    for _ in range(400):
        out.write(b"x" * 2**20)
        out.flush()
        time.sleep(0.05)
"""
