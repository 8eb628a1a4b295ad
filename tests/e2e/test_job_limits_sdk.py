"""Abuse contained, through the unmodified azure-ai-ml SDK against the composed stack (its limits lowered by the
suite's settings, tests/e2e/conftest.py): a job that forks without end, and one that fills its disk, each end
Failed naming the limit they hit (Azure's run details say so), while the stack goes on running other jobs."""

import shlex

import pytest
from azure.ai.ml import command
from azure.ai.ml.entities import AmlCompute, Environment

from tests import abusive_jobs
from tests.e2e.stacks import DISK_LIMIT_GB, PIDS_LIMIT
from tests.waiting import wait_until

pytestmark = pytest.mark.e2e
CLUSTER = "e2e-limits"
ENV = Environment(image="python:3.11-slim")
# The Python bomb retries each refused fork, holding the job at its limit until the node's watch ends it; the shell one
# (`b() { b | b & }`) could give up on its own first and fail with exit code 2 (seen once in a full run).
FORK_BOMB = f"python3 -c {shlex.quote(abusive_jobs.FORK_BOMB)}"
FILL_DISK = f"head -c {DISK_LIMIT_GB * 1024 + 300}M /dev/zero > filler.bin; sleep 600"


@pytest.fixture(scope="module")
def cluster(ml_client):
    ml_client.compute.begin_create_or_update(AmlCompute(name=CLUSTER, size="Standard_DS3_v2", min_instances=0,
                                                        max_instances=2, idle_time_before_scale_down=60)).result()
    yield CLUSTER
    ml_client.compute.begin_delete(CLUSTER).result()


def _ended(ml_client, name: str) -> str:
    return wait_until(lambda: (s := ml_client.jobs.get(name).status) in ("Completed", "Failed", "Canceled") and s,
                      timeout=240, interval=0.5, message=f"job {name} to end")


def _error(rest, workspace_path, name: str) -> dict:
    return rest.get(f"/history/v1.0{workspace_path}/runs/{name}/details").json()["error"]["error"]


@pytest.mark.parametrize(("script", "code", "words"), [
    (FORK_BOMB, "ProcessLimitExceeded", f"limit of {PIDS_LIMIT} processes and threads (AMLEMU_JOB_PIDS_LIMIT)"),
    (FILL_DISK, "DiskLimitExceeded", f"disk use reached its limit of {DISK_LIMIT_GB} GiB (AMLEMU_JOB_DISK_LIMIT_GB)"),
], ids=["fork-bomb", "full-disk"])
def test_a_job_past_its_limit_fails_naming_it_and_its_neighbour_completes(
        ml_client, rest, workspace_path, cluster, script, code, words):
    abuser = ml_client.jobs.create_or_update(command(command=script, environment=ENV, compute=cluster,
                                                     experiment_name="e2e-limits"))
    neighbour = ml_client.jobs.create_or_update(command(command="echo still here", environment=ENV, compute=cluster,
                                                        experiment_name="e2e-limits"))
    assert _ended(ml_client, abuser.name) == "Failed"
    error = _error(rest, workspace_path, abuser.name)
    assert error["innerError"]["code"] == code and words in error["message"], error
    assert _ended(ml_client, neighbour.name) == "Completed"
    assert rest.get(f"{workspace_path}/computes/{cluster}", params={"api-version": "2024-10-01"}).status_code == 200
