"""Compute clusters through the unmodified azure-ai-ml SDK against the composed stack."""

import json

import pytest
from azure.ai.ml import MLClient
from azure.ai.ml.entities import AmlCompute
from azure.core.exceptions import HttpResponseError, ResourceNotFoundError

from tests.waiting import wait_until

pytestmark = pytest.mark.e2e
SERIES = ("Standard_D2", "Standard_D2_v2", "Standard_D2_v3", "Standard_DS2_v2", "Standard_D2s_v3",
          "Standard_D2ds_v4", "Standard_E2a_v4", "Standard_E2_v3", "Standard_F2s_v2", "Standard_H8",
          "Standard_NC6", "Standard_ND6s", "Standard_NV6")


def _cluster(rest, workspace_path, name):
    response = rest.get(f"{workspace_path}/computes/{name}", params={"api-version": "2023-08-01-preview"})
    assert response.status_code == 200, response.text
    return response.json()["properties"]["properties"]


def test_default_workspace_and_from_config(ml_client, credential, tmp_path, stack):
    assert ml_client.workspaces.get(stack.workspace).name == stack.workspace
    (tmp_path / "config.json").write_text(json.dumps({
        "subscription_id": stack.subscription, "resource_group": stack.resource_group,
        "workspace_name": stack.workspace}))
    client = MLClient.from_config(credential, path=str(tmp_path))
    assert client.workspace_name == stack.workspace
    assert any(w.name == stack.workspace for w in client.workspaces.list())


def test_cluster_lifecycle_with_real_nodes(ml_client, rest, workspace_path, nodes_of):
    created = ml_client.compute.begin_create_or_update(AmlCompute(
        name="e2e-cpu", size="Standard_DS3_v2", min_instances=2, max_instances=3,
        idle_time_before_scale_down=1)).result()
    assert created.provisioning_state == "Succeeded"
    assert (created.min_instances, created.max_instances) == (2, 3)

    props = wait_until(lambda: (p := _cluster(rest, workspace_path, "e2e-cpu"))["nodeStateCounts"]["idleNodeCount"] == 2
                       and p, timeout=90, message="two idle nodes")
    assert props["allocationState"] == "Steady"
    assert props["currentNodeCount"] == props["targetNodeCount"] == 2
    assert props["allocationStateTransitionTime"]
    assert set(props["nodeStateCounts"]) == {"idleNodeCount", "runningNodeCount", "preparingNodeCount",
                                             "unusableNodeCount", "leavingNodeCount", "preemptedNodeCount"}
    containers = nodes_of("e2e-cpu")
    assert len(containers) == 2 and all(c.running for c in containers)
    nodes = [n.__dict__ for n in ml_client.compute.list_nodes("e2e-cpu")]
    assert sorted(n["nodeId"] for n in nodes) == sorted(c.labels["amlemu.node"] for c in containers)
    assert {n["nodeState"] for n in nodes} == {"idle"}

    created.min_instances = 0
    updated = ml_client.compute.begin_update(created).result()
    assert updated.min_instances == 0 and updated.idle_time_before_scale_down == 1
    wait_until(lambda: not nodes_of("e2e-cpu"), timeout=90, message="scale to zero containers")
    props = wait_until(lambda: (p := _cluster(rest, workspace_path, "e2e-cpu"))["currentNodeCount"] == 0 and p,
                       timeout=30, message="currentNodeCount 0")
    assert props["allocationState"] == "Steady" and props["targetNodeCount"] == 0

    ml_client.compute.begin_delete("e2e-cpu").result()
    with pytest.raises(ResourceNotFoundError):
        ml_client.compute.get("e2e-cpu")


def test_low_priority_cluster_and_delete_removes_nodes(ml_client, rest, workspace_path, nodes_of):
    ml_client.compute.begin_create_or_update(AmlCompute(
        name="e2e-spot", size="Standard_F2s_v2", tier="low_priority", min_instances=1, max_instances=2)).result()
    assert _cluster(rest, workspace_path, "e2e-spot")["vmPriority"] == "LowPriority"
    assert ml_client.compute.get("e2e-spot").tier == "low_priority"
    container = wait_until(lambda: nodes_of("e2e-spot"), timeout=60, message="a node container")[0]
    assert container.labels["amlemu.priority"] == "LowPriority"
    assert container.labels["amlemu.node"].endswith("_p")
    assert "e2e-spot" in [c.name for c in ml_client.compute.list()]
    ml_client.compute.begin_delete("e2e-spot").result()
    assert not nodes_of("e2e-spot")


def test_sizes_and_usage(ml_client):
    sizes = {s.name: s for s in ml_client.compute.list_sizes()}
    assert all(name in sizes for name in SERIES)
    # The SDK copies the wire fields verbatim (as_dict keeps ARM names), as it does against Azure.
    nc6 = sizes["Standard_NC6"].__dict__
    assert (nc6["vCPUs"], nc6["gpus"], nc6["memoryGB"], nc6["lowPriorityCapable"]) == (6, 1, 56, True)
    usages = [u.__dict__ for u in ml_client.compute.list_usage()]
    assert usages and all(u["unit"] == "Count" and u["limit"] >= 0 for u in usages)
    assert {"TotalDedicatedCores", "TotalLowPriorityCores"} <= {u["name"]["value"] for u in usages}


def test_bad_input_is_an_arm_error_naming_the_field(ml_client):
    with pytest.raises(HttpResponseError) as err:
        ml_client.compute.begin_create_or_update(AmlCompute(name="e2e-bad", size="Standard_Nope_v9")).result()
    assert err.value.status_code == 400 and "vmSize" in str(err.value)
    with pytest.raises(ResourceNotFoundError):
        ml_client.compute.get("e2e-bad")
