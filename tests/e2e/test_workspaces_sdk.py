"""Workspaces through the unmodified SDK: create (an ARM template deployment), get, list, update, delete."""

import pytest
from azure.ai.ml import MLClient
from azure.ai.ml.entities import AmlCompute, Workspace
from azure.core.exceptions import ResourceNotFoundError

from tests.waiting import wait_until

pytestmark = pytest.mark.e2e


def test_create_use_and_delete_a_workspace(ml_client, credential, stack, nodes_of):
    created = ml_client.workspaces.begin_create(
        Workspace(name="e2e-ws", location="westeurope", description="made by the e2e suite",
                  tags={"team": "ml"})).result()
    assert (created.name, created.location) == ("e2e-ws", "westeurope")
    assert created.tags["team"] == "ml"
    assert "e2e-ws" in [w.name for w in ml_client.workspaces.list()]

    client = MLClient(credential, stack.subscription, stack.resource_group, "e2e-ws")
    client.compute.begin_create_or_update(AmlCompute(name="ws-cpu", size="Standard_D2_v3", min_instances=1,
                                                     max_instances=1)).result()
    wait_until(lambda: nodes_of("ws-cpu"), timeout=60, message="a node in the new workspace")

    ml_client.workspaces.begin_delete("e2e-ws", delete_dependent_resources=False).result()
    with pytest.raises(ResourceNotFoundError):
        ml_client.workspaces.get("e2e-ws")
    # The workspace's clusters go with it, containers included.
    wait_until(lambda: not nodes_of("ws-cpu"), timeout=60, message="the workspace's nodes removed")
