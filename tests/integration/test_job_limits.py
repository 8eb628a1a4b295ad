"""A job that forks without end or fills its disk is stopped at its limit and fails naming it, while an ordinary job
beside it on the same cluster runs to its end: real controller loop, real nodes, real job containers.

The limits are small here (64 processes, 8 MiB) so that the abuse takes seconds and stays gentle on the host.
"""

from pathlib import Path

import pytest

from tests import gate
from tests.abusive_jobs import FORK_BOMB, filler

PIDS_LIMIT = 64
DISK_LIMIT_GB = 8 / 1024  # 8 MiB


@pytest.fixture
def settings(settings, docker_client):
    # The engine's data root, as the controller's entry point asks it: nodes read their jobs' layers there.
    return settings.model_copy(update={"job_pids_limit": PIDS_LIMIT, "job_pids_sustain_seconds": 2.0,
                                       "job_disk_limit_gb": DISK_LIMIT_GB, "job_disk_check_seconds": 0.5,
                                       "docker_root": Path(docker_client.info()["DockerRootDir"])})


def _abuse_beside_an_ordinary_job(lab, name: str, code: dict[str, str]):
    """Start an ordinary job, then the abusive one while it runs; the abusive one fails, the ordinary one is let
    go and completes, on the same cluster, neither losing its node. (Job names are the test's own: the session's
    Redis remembers which attempts were claimed.)"""
    lab.cluster(max_nodes=2, idle="PT10M")
    ordinary, after = f"{name}-neighbour", f"{name}-after"
    lab.submit(ordinary, f"echo ordinary; {gate.WAIT}; echo done")
    lab.wait_status(ordinary, "Running")
    lab.submit(name, "python main.py", lab.code(code))
    failed = lab.wait_status(name, "Failed", "Completed", timeout=180)
    assert lab.job(ordinary).status == "Running"  # untouched by its neighbour's end
    gate.release(lab.artifacts(ordinary) / "outputs")
    neighbour = lab.wait_status(ordinary, "Completed", "Failed")
    assert neighbour.status == "Completed" and neighbour.attempt == 1, neighbour.error
    assert failed.attempt == 1 and len(lab.nodes()) == 2  # no node was lost to it
    lab.submit(after, "echo after")  # and the cluster takes more work
    lab.wait_status(after, "Completed")
    return failed


def test_a_fork_bomb_fails_naming_the_pids_limit_and_its_neighbour_completes(lab):
    job = _abuse_beside_an_ordinary_job(lab, "job-bomb", {"main.py": FORK_BOMB})
    assert job.status == "Failed", job.history
    assert job.error["innerError"]["code"] == "ProcessLimitExceeded", job.error
    assert f"limit of {PIDS_LIMIT} processes and threads (AMLEMU_JOB_PIDS_LIMIT)" in job.error["message"]
    assert "bombing" in job.error["message"]  # the log's tail follows


def test_a_job_filling_its_disk_fails_naming_the_disk_limit_and_its_neighbour_completes(lab):
    # into its container's own /tmp: its writable layer, which the node reads off the engine's storage (its working
    # directory is measured as tests/integration/test_job_runner.py and tests/unit/workers show)
    job = _abuse_beside_an_ordinary_job(lab, "job-filler", {"main.py": filler("/tmp/fill.bin")})
    assert job.status == "Failed", job.history
    assert job.error["innerError"]["code"] == "DiskLimitExceeded", job.error
    assert "limit of 8 MiB (AMLEMU_JOB_DISK_LIMIT_GB)" in job.error["message"], job.error["message"]
    log = (lab.artifacts("job-filler") / "user_logs" / "std_log.txt").read_text()
    assert "filling" in log
