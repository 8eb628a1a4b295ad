"""Local compute's rules: what marks a job local, the capacity sized by the machine (no VM size, no cost), the
Execution Service's endpoint the SDK splits, and the zip it unzips: one script, nothing that can escape."""

import io
import json
import urllib.parse
import zipfile

import pytest

from emulator.domain.compute import cluster, cost, local
from emulator.domain.jobs import command_job
from emulator.errors import ValidationFailed

LOCAL = {"properties": {"IsLocal": {"IsLocal": True}}}


def _props(**extra) -> dict:
    return {"properties": {"jobType": "Command", "command": "echo hi", "environmentId": "azureml:env:1",
                           "resources": LOCAL, **extra}}


@pytest.mark.parametrize(("resources", "expected"), [
    (LOCAL, True), ({"properties": {"IsLocal": True}}, True), ({"properties": {"IsLocal": {"IsLocal": False}}}, False),
    ({"properties": {}}, False), ({}, False), ({"properties": "IsLocal"}, False)])
def test_the_sdks_is_local_property_marks_a_local_job(resources, expected):
    assert local.is_local(resources) is expected


def test_a_local_job_names_no_compute_and_asks_no_serverless_capacity():
    _props_stored, spec = command_job.parse(_props())
    assert spec.local and spec.compute_id is None and spec.capacity is None
    _stored, named = command_job.parse(_props(computeId="/subscriptions/s/computes/cpu"))
    assert not named.local  # a named compute wins


@pytest.mark.parametrize(("extra", "target"), [
    ({"resources": {**LOCAL, "instanceCount": 2}}, "properties.resources.instanceCount"),
    ({"distribution": {"distributionType": "PyTorch"}}, "properties.distribution")])
def test_a_local_job_runs_one_process_on_one_machine(extra, target):
    with pytest.raises(ValidationFailed) as caught:
        command_job.parse(_props(**extra))
    assert caught.value.target == target


def test_the_capacity_is_the_machine_scaling_from_zero_at_no_cost():
    body = local.cluster_body("eastus", 2, 23.4)
    inner = body["properties"]["properties"]
    spec = cluster.parse_spec(inner, local_capacity=True)
    assert (spec.vm_size.name, spec.vm_size.vcpus, spec.vm_size.memory_gb) == ("Local", 2, 23.4)
    assert (spec.scale.min_nodes, spec.scale.max_nodes) == (0, 2)
    assert cost.rate("Local", "Dedicated", "eastus").per_hour == 0.0
    with pytest.raises(ValidationFailed) as caught:  # no user's cluster can claim the machine's size
        cluster.parse_spec(inner)
    assert caught.value.target == "properties.properties.vmSize"
    assert local.is_hidden(local.CLUSTER_NAME) and local.is_hidden("serverless.dedicated.standard_ds3_v2")
    assert not local.is_hidden("cpu-cluster")


def test_the_endpoint_carries_the_body_the_sdk_posts():
    url = "https://localhost:8443/execution/v1.0/ws/experiments/my%20exp/localrun?api-version=2019-05-01"
    body = local.execution_body("job-1", "my exp", None)
    endpoint = local.service_endpoint(url, body)
    first, encoded = endpoint.split(local.FAKE)  # as azure-ai-ml's get_execution_service_response does
    assert first == url and json.loads(urllib.parse.unquote_plus(encoded)) == {"RunId": "job-1",
                                                                                 "ExperimentName": "my exp"}
    assert local.execution_body("j", "e", "snap")["SnapshotId"] == "snap"
    assert local.run_of(body) == "job-1"
    for bad in ({}, {"RunId": ""}, {"RunId": 3}, []):
        with pytest.raises(ValidationFailed):
            local.run_of(bad)


def test_the_zip_holds_one_executable_script_that_says_what_happens():
    archive = zipfile.ZipFile(io.BytesIO(local.invocation_zip("job-1")))
    [entry] = archive.infolist()
    assert entry.filename == "azureml-setup/Invocation.sh" and not entry.is_dir()
    assert (entry.external_attr >> 16) & 0o777 == 0o755
    script = archive.read(entry).decode()
    assert script.startswith("#!/bin/bash\n") and "runs in a container on the machine the emulator" in script
    assert "'job-1'" in script and script.rstrip().endswith("exit 0")
    commands = [line for line in script.splitlines() if line and not line.startswith("#")]
    assert commands == ["exit 0"]  # nothing runs on the client


@pytest.mark.parametrize(("compute_id", "expected"), [
    ("local", True), ("LOCAL", True), ("/subscriptions/s/resourceGroups/r/providers/p/workspaces/w/computes/local", True),
    ("locals", False), ("cpu", False)])
def test_local_as_a_compute_name(compute_id, expected):
    assert local.is_local_name(compute_id) is expected
