"""Core quota through the unmodified azure-ai-ml SDK against the composed stack: with a workspace cap of one node's
cores, a second cluster's job waits Queued with Azure's quota message (on the job's run details and on the compute)
while the first cluster's job holds the quota, then runs once the first cluster's node has left; `list_usage` shows
the limit, and the wait is one `quota.wait` event on the timeline."""

import json

import pytest
from azure.ai.ml import command
from azure.ai.ml.entities import AmlCompute, Environment
from typer.testing import CliRunner

from emulator.cli.main import app
from tests import gate
from tests.waiting import wait_until

pytestmark = pytest.mark.e2e
SIZE, FAMILY = "Standard_D2_v2", "standardDv2Family"  # 2 vCPUs, a family no other test of the suite uses
ENV = Environment(image="python:3.11-slim")


def _compute(rest, workspace_path, name) -> dict:
    response = rest.get(f"{workspace_path}/computes/{name}", params={"api-version": "2024-10-01"})
    assert response.status_code == 200, response.text
    return response.json()["properties"]


def _status(ml_client, name: str, *statuses: str, timeout: float = 180.0) -> str:
    return wait_until(lambda: (s := ml_client.jobs.get(name).status) in statuses and s, timeout=timeout,
                      interval=0.5, message=f"job {name} to reach {statuses}")


def _quota(*args: str) -> dict:
    result = CliRunner().invoke(app, ["quota", *args, "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


@pytest.fixture
def one_node_of_quota(stack):
    """The workspace capped at one node of the family with `amlemu quota`; the cap is lifted afterwards."""
    capped = _quota("--workspace", stack.workspace, "--family", f"{FAMILY}=2")
    assert capped["limits"]["families"][FAMILY] == 2 and capped["override"] == {"families": {FAMILY: 2}}
    yield
    assert _quota("--workspace", stack.workspace, "--family", f"{FAMILY}=default")["limits"]["families"][FAMILY] > 2


def test_a_job_waits_queued_for_quota_another_holds_then_runs_when_it_frees(
        ml_client, rest, stack, workspace_path, job_outputs, one_node_of_quota):
    for name in ("e2e-quota-a", "e2e-quota-b"):
        ml_client.compute.begin_create_or_update(AmlCompute(name=name, size=SIZE, min_instances=0, max_instances=1,
                                                            idle_time_before_scale_down=1)).result()
    usage = {u.__dict__["name"]["value"]: u.__dict__ for u in ml_client.compute.list_usage()}
    assert usage[FAMILY]["limit"] >= 2  # the region's; the workspace's cap is its own
    after = rest.get("/_emulator/events", params={"workspace": stack.workspace}).json()["last"] or 0

    holder = ml_client.jobs.create_or_update(command(command=f"echo holding; {gate.WAIT}", environment=ENV,
                                                     compute="e2e-quota-a", experiment_name="e2e-quota"))
    _status(ml_client, holder.name, "Running")
    waiter = ml_client.jobs.create_or_update(command(command="echo ran after the wait", environment=ENV,
                                                     compute="e2e-quota-b", experiment_name="e2e-quota"))

    waiting = wait_until(lambda: (p := _compute(rest, workspace_path, "e2e-quota-b"))["properties"]["errors"] and p,
                         timeout=60, message="the quota error on the waiting cluster")
    (error,) = waiting["properties"]["errors"]
    assert error["error"]["code"] == "QuotaExceeded"
    assert "The specified workspace has a Standard Dv2 family vCPU quota of 2 (2 in use)" in error["error"]["message"]
    assert waiting["properties"]["allocationStateTransitionTime"]
    assert waiting["properties"]["currentNodeCount"] == 0
    assert ml_client.jobs.get(waiter.name).status == "Queued"
    details = rest.get(f"/history/v1.0{workspace_path}/runs/{waiter.name}/details").json()
    assert any("vCPU quota of 2" in w["message"] for w in details["warnings"])

    gate.release(job_outputs(holder.name))  # the holder ends; its node leaves after a second idle: quota frees
    assert _status(ml_client, holder.name, "Completed", "Failed") == "Completed"
    assert _status(ml_client, waiter.name, "Completed", "Failed", timeout=240) == "Completed"
    assert _compute(rest, workspace_path, "e2e-quota-b")["properties"]["errors"] is None

    timeline = rest.get("/_emulator/events", params={"workspace": stack.workspace, "after": after,
                                                     "kind": ["quota.wait", "quota.freed"]}).json()["value"]
    assert [e["kind"] for e in timeline] == ["quota.wait", "quota.freed"]  # once per wait, however many passes
    assert timeline[0]["subject"].endswith("/computes/e2e-quota-b") and timeline[0]["data"]["quota"] == FAMILY
    for name in ("e2e-quota-a", "e2e-quota-b"):
        ml_client.compute.begin_delete(name).result()


def test_a_job_whose_nodes_alone_exceed_the_quota_fails_as_in_azure(ml_client, rest, workspace_path, one_node_of_quota):
    name = "e2e-quota-pair"  # two nodes allowed by the cluster, one by the quota: accepted with Azure's warning
    ml_client.compute.begin_create_or_update(AmlCompute(name=name, size=SIZE, min_instances=0, max_instances=2,
                                                        idle_time_before_scale_down=1)).result()
    (warning,) = _compute(rest, workspace_path, name)["properties"]["errors"]
    assert warning["error"]["code"] == "ClusterMaxNodesExceedCoreQuota"

    job = ml_client.jobs.create_or_update(command(command="echo never", environment=ENV, compute=name,
                                                  instance_count=2, experiment_name="e2e-quota"))
    assert _status(ml_client, job.name, "Completed", "Failed") == "Failed"
    error = rest.get(f"/history/v1.0{workspace_path}/runs/{job.name}/details").json()["error"]["error"]
    assert error["message"].startswith("Job submission to AzureML Compute encountered an Exception with status code "
                                       "JobNodeCountExceedsCoreQuota, The specified workspace has a Standard Dv2 "
                                       "family vCPU quota of 2 and is less than the requested job node count of 2 "
                                       "which maps to 4 vCPUs."), error
    assert _compute(rest, workspace_path, name)["properties"]["currentNodeCount"] == 0  # no node was asked for
    ml_client.compute.begin_delete(name).result()
