"""SIGKILL, not a graceful restart: the api, the controller, redis or a node killed while a burst of jobs is in
flight (some running, the rest queued). No job is lost, none runs its command to the end twice, and once the
cluster is gone no container of it is left."""

import pytest
from azure.ai.ml import command
from azure.ai.ml.entities import AmlCompute, Environment

from emulator.dispatch import protocol
from emulator.runtime.docker import DockerRuntime
from tests import gate
from tests.waiting import wait_until

pytestmark = pytest.mark.e2e
BURST = 6
END = ("Completed", "Failed", "Canceled")


def _open_gates(ml_client, job_dir, names: list[str]) -> bool:
    """Let each job that waits at its gate go on; True once every job has ended."""
    statuses = {name: ml_client.jobs.get(name).status for name in names}
    for name, status in statuses.items():
        if status == "Running":
            try:
                gate.release(job_dir(name) / "outputs", timeout=0.3)
            except AssertionError:  # not at its gate yet
                pass
    return all(status in END for status in statuses.values())


def _kill(stack, nodes_of, cluster: str, victim: str) -> None:
    if victim == "node":  # one that runs a job: both are busy
        DockerRuntime().signal(nodes_of(cluster)[0].id, "SIGKILL")
        return
    stack.compose("kill", "-s", "SIGKILL", victim, capture=True)
    stack.compose("start", victim, capture=True)
    assert stack.wait_healthy(timeout=120)


@pytest.mark.parametrize("victim", ["api", "controller", "redis", "node"])
def test_a_sigkill_mid_burst_loses_no_job_runs_none_twice_and_leaves_no_orphan(stack, ml_client, job_dir, nodes_of,
                                                                                 workspace_path, victim):
    cluster = f"e2e-kill-{victim[:4]}"
    ml_client.compute.begin_create_or_update(AmlCompute(name=cluster, size="Standard_D2_v3", min_instances=0,
                                                        max_instances=2, idle_time_before_scale_down=5)).result()
    env = Environment(image="python:3.11-slim")
    names = [ml_client.jobs.create_or_update(command(command=f"echo started; {gate.WAIT}; echo finished",
                                                     environment=env, compute=cluster)).name for _ in range(BURST)]
    wait_until(lambda: sum(ml_client.jobs.get(n).status == "Running" for n in names) == 2, timeout=180,
               interval=0.5, message="two jobs running, the others queued")

    _kill(stack, nodes_of, cluster, victim)

    wait_until(lambda: _open_gates(ml_client, job_dir, names), timeout=300, interval=0.5,
               message=f"the burst to end after a SIGKILL of the {victim}")
    for name in names:
        assert ml_client.jobs.get(name).status == "Completed", name
        log = (job_dir(name) / "user_logs" / "std_log.txt").read_text()
        assert log.count("finished") == 1, log  # to its end once, whatever attempt got there
    ml_client.compute.begin_delete(cluster).result()
    left = DockerRuntime().list({"amlemu.stack": stack.label, "amlemu.compute": cluster})
    assert not left, [c.name for c in left]
    tags = {protocol.job_tag(f"{workspace_path}/jobs/{name}") for name in names}
    jobs_left = [c.name for c in DockerRuntime().list({"amlemu.stack": stack.label, "amlemu.role": "job"})
                 if c.labels.get("amlemu.job") in tags]
    assert not jobs_left, jobs_left
