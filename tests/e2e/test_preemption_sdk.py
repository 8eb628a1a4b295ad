"""Low-priority preemption end to end with the unmodified SDK (issue points 3 and 8): the checkpointing sample on
a `tier="low_priority"` cluster, its node preempted through the emulator's REST route as it runs; the job goes back
to Queued as attempt 2, resumes from its checkpoint on a fresh node and completes with the undisturbed result, and
both the history route and `jobs.stream` tell the preemption, as do the event timeline, /metrics and `amlemu
cost`. A dedicated cluster's nodes cannot be preempted."""

import contextlib
import io
import json
import os
import threading
import uuid

import pytest
from azure.ai.ml.entities import AmlCompute

from emulator.runtime.docker import DockerRuntime
from tests.e2e.timeline_checks import check_preemption_recorded
from tests.samples import checkpointing_job, checkpointing_result
from tests.waiting import wait_until

pytestmark = pytest.mark.e2e
API = {"api-version": "2023-08-01-preview"}
STEPS, STEP_SECONDS = 40, 0.5  # 20 s of steps, a checkpoint every 5 (2.5 s)
WARNING = "Low priority compute preemption warning"


@pytest.fixture
def clusters(ml_client):
    """Clusters made by a test, deleted after it (with their nodes, kept preempted ones included)."""
    made: list[str] = []

    def make(tier: str, max_nodes: int) -> str:
        name = f"spot-{uuid.uuid4().hex[:6]}" if tier == "low_priority" else f"dedi-{uuid.uuid4().hex[:6]}"
        ml_client.compute.begin_create_or_update(AmlCompute(
            name=name, size="Standard_DS3_v2", tier=tier, min_instances=0, max_instances=max_nodes,
            idle_time_before_scale_down=5)).result()
        made.append(name)
        return name

    yield make
    for name in made:
        ml_client.compute.begin_delete(name).result()


def _nodes(ml_client, cluster: str) -> list[dict]:
    return [n.__dict__ for n in ml_client.compute.list_nodes(cluster)]  # SDK 1.35 keeps the wire names


def _history(rest, workspace_path: str, name: str) -> dict:
    response = rest.get(f"/_emulator{workspace_path}/jobs/{name}/history")
    assert response.status_code == 200, response.text
    return response.json()


def test_a_preempted_checkpointing_job_resumes_on_a_fresh_node_with_the_same_result(
        ml_client, rest, workspace_path, clusters, job_outputs):
    cluster = clusters("low_priority", 2)
    assert ml_client.compute.get(cluster).tier == "low_priority"
    job = checkpointing_job(cluster, STEPS, STEP_SECONDS, "e2e-preemption")
    name = ml_client.jobs.create_or_update(job).name
    # Running, with a checkpoint written, on a node list_nodes names.
    wait_until(lambda: (job_outputs(name) / "checkpoint.json").exists(), timeout=180, interval=0.3,
               message="the job's first checkpoint")
    (first,) = [n["nodeId"] for n in _nodes(ml_client, cluster) if n.get("runId") == name]
    assert ml_client.jobs.get(name).status == "Running"

    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        streaming = threading.Thread(target=ml_client.jobs.stream, args=(name,))
        streaming.start()
        response = rest.post(f"/_emulator{workspace_path}/computes/{cluster}/preempt", json={"nodeId": first})
        assert response.status_code == 202, response.text
        assert response.json()["nodeId"] == first and response.json()["eventId"]
        # The sample acknowledges the notice: the node is taken well before NotBefore (30 s) and kept listed as
        # preempted (60 s), counted in nodeStateCounts, while the job goes back to the queue as attempt 2.
        wait_until(lambda: any(n["nodeId"] == first and n["nodeState"] == "preempted"
                               for n in _nodes(ml_client, cluster)), timeout=25, interval=0.2,
                   message=f"list_nodes to show {first} preempted")
        counts = rest.get(f"{workspace_path}/computes/{cluster}", params=API).json()["properties"]["properties"]
        assert counts["nodeStateCounts"]["preemptedNodeCount"] == 1, counts
        wait_until(lambda: _history(rest, workspace_path, name)["attempt"] == 2, timeout=30, interval=0.2,
                   message="attempt 2")
        streaming.join(timeout=240)
    assert not streaming.is_alive(), "jobs.stream did not return"
    assert ml_client.jobs.get(name).status == "Completed"

    # The history shows attempt 1 running, the preemption, Queued again as attempt 2, then Running and Completed.
    history = _history(rest, workspace_path, name)
    assert (history["status"], history["attempt"]) == ("Completed", 2)
    steps = [(h["status"], h.get("attempt")) for h in history["history"]]
    running_1, queued_2 = steps.index(("Running", 1)), steps.index(("Queued", 2))
    assert running_1 < queued_2 < steps.index(("Running", 2)) < steps.index(("Completed", 2)), steps
    warnings = [h["warning"] for h in history["history"] if h.get("warning")]
    assert warnings == [f"{WARNING}: node {first} was preempted during attempt 1."], history
    # Attempt 2 ran on a fresh node (the preempted one never comes back).
    assert all(n["nodeId"] != first or n["nodeState"] == "preempted" for n in _nodes(ml_client, cluster))

    # It resumed from its checkpoint and ended with exactly the undisturbed result, written once.
    out = printed.getvalue()
    assert "resuming from step" in out and "stopped at step" in out, out[-3000:]
    assert f"acknowledged event {response.json()['eventId']}" in out, out[-3000:]
    assert out.count("result written to outputs/result.json") == 1, out[-3000:]
    assert "amlemu: attempt 2. " in out and f"Warnings:\n{WARNING}" in out, out[-3000:]
    assert json.loads((job_outputs(name) / "result.json").read_text()) == checkpointing_result(STEPS)
    runtime, label = DockerRuntime(), os.environ["AMLEMU_STACK"]
    wait_until(lambda: not runtime.list({"amlemu.stack": label, "amlemu.role": "job", "amlemu.job-name": name}),
               timeout=30, interval=0.5, message="no container of the job left")
    # Each step recorded once on the event timeline, counted in /metrics, and priced by `amlemu cost`.
    check_preemption_recorded(rest, workspace_path, os.environ["AMLEMU_WORKSPACE"], cluster, name, first)


def test_a_dedicated_cluster_refuses_preemption_naming_itself(rest, workspace_path, clusters):
    cluster = clusters("dedicated", 1)
    response = rest.post(f"/_emulator{workspace_path}/computes/{cluster}/preempt", json={})
    assert response.status_code == 409, response.text
    assert cluster in response.json()["error"]["message"] and "Dedicated" in response.json()["error"]["message"]
    policy = rest.put(f"/_emulator{workspace_path}/computes/{cluster}/preemption",
                      json={"meanSecondsBetweenPreemptions": 10})
    assert policy.status_code == 409 and cluster in policy.text, policy.text
