"""State survives restarts of every service and a full down/up; containers are adopted, never orphaned."""

import os
import subprocess
import sys
from pathlib import Path

import pytest
from azure.ai.ml.entities import AmlCompute

from emulator.runtime.docker import DockerRuntime
from tests import gate
from tests.waiting import wait_until

pytestmark = pytest.mark.e2e
AMLEMU = str(Path(sys.executable).parent / "amlemu")


def _idle_nodes(ml_client, name: str, count: int) -> list[str]:
    def idle():
        nodes = [n.__dict__ for n in ml_client.compute.list_nodes(name)]
        return sorted(n["nodeId"] for n in nodes) if len(nodes) == count and all(
            n["nodeState"] == "idle" for n in nodes) else None
    return wait_until(idle, timeout=90, message=f"{count} idle node(s) on {name}")


def _stack_containers() -> list:
    return DockerRuntime().list({"amlemu.stack": os.environ["AMLEMU_STACK"], "amlemu.role": "node"})


@pytest.mark.parametrize("service", ["controller", "api", "redis"])
def test_restart_of_a_service_keeps_state_and_adopts_nodes(stack, ml_client, nodes_of, service):
    name = f"e2e-rs-{service[:4]}"
    ml_client.compute.begin_create_or_update(AmlCompute(name=name, size="Standard_D2_v3", min_instances=1,
                                                        max_instances=2)).result()
    before = _idle_nodes(ml_client, name, 1)
    containers = {c.id for c in nodes_of(name)}

    stack.compose("restart", service, capture=True)
    assert stack.wait_healthy(timeout=90)

    # The same node keeps serving: adopted by its labels, not replaced, nothing extra started.
    assert _idle_nodes(ml_client, name, 1) == before
    assert {c.id for c in nodes_of(name)} == containers
    cluster = ml_client.compute.get(name)
    assert (cluster.min_instances, cluster.max_instances, cluster.size) == (1, 2, "Standard_D2_v3")
    ml_client.compute.begin_delete(name).result()
    assert not nodes_of(name)


def test_down_then_up_keeps_workspaces_and_computes(stack, ml_client, nodes_of):
    ml_client.compute.begin_create_or_update(AmlCompute(name="e2e-keep", size="Standard_D2_v3", min_instances=1,
                                                        max_instances=1)).result()
    _idle_nodes(ml_client, "e2e-keep", 1)

    subprocess.run([AMLEMU, "down"], check=True, capture_output=True)
    assert not _stack_containers(), "down leaves no node container behind"
    subprocess.run([AMLEMU, "up", "--skip-build"], check=True, capture_output=True)

    cluster = ml_client.compute.get("e2e-keep")
    assert (cluster.min_instances, cluster.max_instances) == (1, 1)
    _idle_nodes(ml_client, "e2e-keep", 1)
    assert len(nodes_of("e2e-keep")) == 1
    ml_client.compute.begin_delete("e2e-keep").result()
    assert not nodes_of("e2e-keep")  # the delete completes once its nodes are gone (other tests' clusters may idle)


def _job_log(job_dir, job_name: str) -> str:
    return (job_dir(job_name) / "user_logs" / "std_log.txt").read_text()


def _job_containers() -> list:
    return DockerRuntime().list({"amlemu.stack": os.environ["AMLEMU_STACK"], "amlemu.role": "job"})


@pytest.mark.parametrize("service", ["controller", "api", "redis"])
def test_restart_while_jobs_queue_and_run_loses_none_and_runs_none_twice(stack, ml_client, service, job_dir):
    from azure.ai.ml import command
    from azure.ai.ml.entities import Environment

    name = f"e2e-rj-{service[:4]}"
    ml_client.compute.begin_create_or_update(AmlCompute(name=name, size="Standard_D2_v3", min_instances=0,
                                                        max_instances=1)).result()
    env = Environment(image="python:3.11-slim")
    running = ml_client.jobs.create_or_update(command(
        command=f"echo started $AZUREML_RUN_ID; {gate.WAIT}; echo finished", environment=env, compute=name))
    queued = ml_client.jobs.create_or_update(command(command="echo second", environment=env, compute=name))
    wait_until(lambda: ml_client.jobs.get(running.name).status == "Running", timeout=120, message="first job running")
    assert ml_client.jobs.get(queued.name).status == "Queued"  # one node: the second waits for it

    stack.compose("restart", service, capture=True)
    assert stack.wait_healthy(timeout=90)
    gate.release(job_dir(running.name) / "outputs")  # the first job finishes only after the restart

    for job in (running, queued):
        wait_until(lambda j=job: ml_client.jobs.get(j.name).status in ("Completed", "Failed"), timeout=180,
                   interval=0.5, message=f"{job.name} to end")
        assert ml_client.jobs.get(job.name).status == "Completed"
    log = _job_log(job_dir, running.name)
    assert log.count("started") == 1 and log.count("finished") == 1, log  # ran once, to its end
    assert "second" in _job_log(job_dir, queued.name)
    wait_until(lambda: not _job_containers(), timeout=30, message="no job container left")
    ml_client.compute.begin_delete(name).result()
