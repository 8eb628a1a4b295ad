"""Endpoint and deployment rules: names, auth modes, traffic, the weighted pick, deployment bodies."""

import random

import pytest

from emulator.domain.serving import deployments, endpoints
from emulator.errors import ValidationFailed

WS = "/subscriptions/s/resourceGroups/rg/providers/Microsoft.MachineLearningServices/workspaces/ws"


@pytest.mark.parametrize("name", ["abc", "my-endpoint-1", "A" + "b" * 31])
def test_good_names(name):
    assert endpoints.endpoint_name(name) == name
    assert endpoints.deployment_name(name) == name


@pytest.mark.parametrize("name", ["ab", "1abc", "abc-", "a_bc", "a" * 33, "a.bc", ""])
def test_bad_names_name_the_field(name):
    with pytest.raises(ValidationFailed) as caught:
        endpoints.endpoint_name(name)
    assert caught.value.target == "endpointName"
    with pytest.raises(ValidationFailed) as caught:
        endpoints.deployment_name(name)
    assert caught.value.target == "deploymentName"


def test_auth_modes_are_spelled_as_azure_does():
    assert endpoints.auth_mode("key") == "Key"
    assert endpoints.auth_mode("AMLToken") == "AMLToken"
    assert endpoints.auth_mode("aadtoken") == "AADToken"
    for bad in ("password", None, 3):
        with pytest.raises(ValidationFailed):
            endpoints.auth_mode(bad)


def test_traffic_must_add_up_to_100_or_be_empty():
    assert endpoints.traffic({"blue": 90, "green": 10}, ["blue", "green"], "e") == {"blue": 90, "green": 10}
    assert endpoints.traffic({}, [], "e") == {}
    assert endpoints.traffic({"blue": 0}, ["blue"], "e") == {}
    assert endpoints.traffic({"BLUE": 100}, ["blue"], "e") == {"blue": 100}  # names are case-insensitive
    with pytest.raises(ValidationFailed, match="add up to 100") as caught:
        endpoints.traffic({"blue": 50, "green": 40}, ["blue", "green"], "e")
    assert caught.value.target == "properties.traffic"


@pytest.mark.parametrize("traffic, target", [
    ({"red": 100}, "properties.traffic.red"),
    ({"blue": 101}, "properties.traffic.blue"),
    ({"blue": -1}, "properties.traffic.blue"),
    ({"blue": 50.5}, "properties.traffic.blue"),
    ({"blue": True}, "properties.traffic.blue"),
    (["blue"], "properties.traffic"),
])
def test_bad_traffic_names_the_field(traffic, target):
    with pytest.raises(ValidationFailed) as caught:
        endpoints.traffic(traffic, ["blue"], "e")
    assert caught.value.target == target


def test_mirror_traffic_goes_to_a_deployment_without_live_traffic():
    live = {"blue": 100}
    assert endpoints.mirror_traffic({"green": 10}, live, ["blue", "green"], "e") == {"green": 10}
    with pytest.raises(ValidationFailed, match="live traffic"):
        endpoints.mirror_traffic({"blue": 10}, live, ["blue", "green"], "e")
    with pytest.raises(ValidationFailed, match="at most 50"):
        endpoints.mirror_traffic({"green": 60}, live, ["blue", "green"], "e")


def test_pick_follows_the_weights():
    weights = {"blue": 90, "green": 10}
    assert endpoints.pick(weights, 0.0) == "blue"
    assert endpoints.pick(weights, 0.8999) == "blue"
    assert endpoints.pick(weights, 0.9) == "green"
    assert endpoints.pick(weights, 0.99999) == "green"
    assert endpoints.pick({}, 0.5) is None
    assert endpoints.pick({"a": 0, "b": 100}, 0.0) == "b"
    draws = random.Random(7)
    picks = [endpoints.pick(weights, draws.random()) for _ in range(10_000)]
    assert 0.08 < picks.count("green") / len(picks) < 0.12


def test_mirrored_takes_its_share():
    assert endpoints.mirrored({"green": 10}, 0.05) == "green"
    assert endpoints.mirrored({"green": 10}, 0.5) is None
    assert endpoints.mirrored({}, 0.0) is None


def body(**props) -> dict:
    base = {"model": f"{WS}/models/m/versions/1", "environmentId": f"{WS}/environments/env/versions/2",
            "codeConfiguration": {"codeId": f"{WS}/codes/c/versions/1", "scoringScript": "score.py"},
            "instanceType": "Standard_DS2_v2"}
    return {"location": "local", "sku": {"name": "Default", "capacity": 2}, "properties": {**base, **props}}


def test_a_deployment_gets_azures_defaults():
    stored = deployments.validated(body())
    props = stored["properties"]
    assert props["scaleSettings"] == {"scaleType": "Default"}
    assert props["livenessProbe"] == deployments.DEFAULT_PROBE == props["readinessProbe"]
    assert props["requestSettings"]["maxConcurrentRequestsPerInstance"] == 1
    assert stored["sku"]["capacity"] == 2 and props["instanceType"] == "Standard_DS2_v2"
    assert stored["refs"]["model"] == {"kind": "models", "name": "m", "version": "1", "registry": None}
    probe = deployments.probe({**deployments.DEFAULT_PROBE, "initialDelay": "PT1S", "period": "PT0.5S"})
    assert (probe.initial_delay, probe.period, probe.failure_threshold) == (1, 0.5, 30)


@pytest.mark.parametrize("change, target", [
    ({"instanceType": "Standard_XL9"}, "properties.instanceType"),
    ({"model": "azureml:m:1"}, "properties.model"),
    ({"model": f"{WS}/codes/c/versions/1"}, "properties.model"),
    ({"environmentId": None}, "properties.environmentId"),
    ({"codeConfiguration": {"codeId": f"{WS}/codes/c/versions/1"}}, "properties.codeConfiguration.scoringScript"),
    ({"codeConfiguration": {"codeId": f"{WS}/codes/c/versions/1", "scoringScript": "../x.py"}},
     "properties.codeConfiguration.scoringScript"),
    ({"endpointComputeType": "Kubernetes"}, "properties.endpointComputeType"),
    ({"livenessProbe": {"period": "soon"}}, "properties.livenessProbe.period"),
    ({"readinessProbe": {"failureThreshold": 0}}, "properties.readinessProbe.failureThreshold"),
    ({"scaleSettings": {"scaleType": "TargetUtilization"}}, "properties.scaleSettings.scaleType"),
])
def test_bad_deployments_name_the_field(change, target):
    with pytest.raises(ValidationFailed) as caught:
        deployments.validated(body(**change))
    assert caught.value.target == target


def test_instance_count_bounds():
    with pytest.raises(ValidationFailed) as caught:
        deployments.validated({**body(), "sku": {"capacity": 99}})
    assert caught.value.target == "sku.capacity"


def test_only_spec_changes_replace_instances():
    old = deployments.validated(body())
    scaled = deployments.validated({**body(), "sku": {"capacity": 5}})
    assert not deployments.needs_new_instances(old, scaled)
    described = deployments.validated(body(description="new words"))
    assert not deployments.needs_new_instances(old, described)
    assert deployments.needs_new_instances(old, deployments.validated(body(environmentVariables={"A": "1"})))
