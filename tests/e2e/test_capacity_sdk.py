"""A capacity shortage through the unmodified azure-ai-ml SDK against the composed stack: with low-priority capacity of
a family short (`amlemu capacity short`, as a user would), a low-priority cluster's job waits Queued, the cluster shows
Resizing with Azure's AllocationFailed message and no node, the job's run details warn of it; once capacity is
restored (`amlemu capacity restore`) the cluster grows and the job completes; the wait is one `capacity.short` and
one `capacity.restored` on the timeline."""

import json

import pytest
from azure.ai.ml import command
from azure.ai.ml.entities import AmlCompute, Environment
from typer.testing import CliRunner

from emulator.cli.main import app
from tests.waiting import wait_until

pytestmark = pytest.mark.e2e
SIZE, FAMILY = "Standard_E2_v3", "standardEv3Family"  # 2 vCPUs, a family no other test runs jobs on
CLUSTER = "e2e-capacity"
ENV = Environment(image="python:3.11-slim")
SHORT = "Desired number of low priority nodes could not be allocated. Allocation failed. We do not have sufficient " \
        "capacity for the requested VM size in this region."


def _capacity(*args: str) -> dict:
    result = CliRunner().invoke(app, ["capacity", *args, "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


@pytest.fixture
def short_of_capacity(stack):
    """Low-priority VMs of the family short until restored; restored afterwards whatever happens."""
    (shortage,) = _capacity("short", "--family", FAMILY)["shortages"]
    assert (shortage["family"], shortage["priority"], shortage["end"]) == (FAMILY, "LowPriority", None)
    yield
    _capacity("restore")


def test_a_low_priority_job_waits_queued_while_capacity_is_short_and_completes_once_it_returns(
        ml_client, rest, stack, workspace_path, short_of_capacity):
    ml_client.compute.begin_create_or_update(AmlCompute(name=CLUSTER, size=SIZE, tier="low_priority", min_instances=0,
                                                        max_instances=1, idle_time_before_scale_down=1)).result()
    after = rest.get("/_emulator/events", params={"workspace": stack.workspace}).json()["last"] or 0
    job = ml_client.jobs.create_or_update(command(command="echo ran once capacity returned", environment=ENV,
                                                  compute=CLUSTER, experiment_name="e2e-capacity"))

    def resizing():  # the SDK's own ARM client reads what its AmlCompute entity leaves out
        cluster = ml_client.compute._operation.get(stack.resource_group, stack.workspace, CLUSTER).properties
        return cluster.properties.allocation_state == "Resizing" and cluster.properties.errors and cluster
    waiting = wait_until(resizing, timeout=120, interval=0.5, message="the cluster to wait Resizing, short of capacity")
    (error,) = waiting.properties.errors
    assert error.error.code == "AllocationFailed" and error.error.message.startswith(SHORT)
    assert (waiting.properties.current_node_count, waiting.properties.target_node_count) == (0, 1)
    assert waiting.properties.allocation_state_transition_time is not None
    assert ml_client.compute.get(CLUSTER).tier == "low_priority"
    assert ml_client.jobs.get(job.name).status == "Queued"
    assert list(ml_client.compute.list_nodes(CLUSTER)) == []
    details = rest.get(f"/history/v1.0{workspace_path}/runs/{job.name}/details").json()
    assert any(w["message"].startswith(SHORT) for w in details["warnings"])

    assert _capacity("restore")["shortages"] == []
    status = wait_until(lambda: (s := ml_client.jobs.get(job.name).status) in ("Completed", "Failed") and s,
                        timeout=180, interval=0.5, message=f"job {job.name} to end once capacity returned")
    assert status == "Completed"
    props = ml_client.compute._operation.get(stack.resource_group, stack.workspace, CLUSTER).properties.properties
    assert props.errors is None

    timeline = rest.get("/_emulator/events", params={"workspace": stack.workspace, "after": after,
                                                     "kind": ["capacity.short", "capacity.restored"]}).json()["value"]
    assert [e["kind"] for e in timeline] == ["capacity.short", "capacity.restored"]  # once each, however many passes
    assert timeline[0]["subject"].endswith(f"/computes/{CLUSTER}") and timeline[0]["data"]["family"] == FAMILY
    ml_client.compute.begin_delete(CLUSTER).result()
