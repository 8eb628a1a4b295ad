"""The real SDK attaches a KubernetesCompute to a live api process (HTTPS, no Docker, no controller), reads it back as
Azure shows attached compute, submits a job on it with an instance type, is refused bad attaches and an unknown
instance type naming the field, and detaches it."""

import json
import subprocess
import sys
from pathlib import Path

from tests.service.conftest import clean_env

PROBE = Path(__file__).with_name("kubernetes_probe.py")


def test_sdk_attaches_submits_and_detaches(live_api, tmp_path):
    env = {**clean_env(), **live_api.env_vars(), "TMPDIR": str(tmp_path)}
    result = subprocess.run([sys.executable, str(PROBE), str(tmp_path)], env=env, cwd=tmp_path, capture_output=True,
                            text=True, timeout=240)
    assert result.returncode == 0, result.stderr[-3000:]
    seen = json.loads(result.stdout[result.stdout.rindex('{"made"'):])
    assert seen["made"] == seen["state"] == "Succeeded"
    assert (seen["type"], seen["namespace"]) == ("kubernetes", "ml")
    assert seen["resource_id"].endswith("/Microsoft.ContainerService/managedClusters/aks1")
    assert seen["properties"]["defaultInstanceType"] == "small"
    assert seen["properties"]["instanceTypes"]["small"]["nodeSelector"] == {"pool": "cpu"}
    assert "no kubeconfig for" in seen["description"] and "running on the local runtime" in seen["description"]
    assert seen["raw"]["properties"]["isAttachedCompute"] is True
    assert seen["listed"] == ["k8s"]  # its instance types' local stand-ins are never listed
    assert seen["job"]["compute"] == "k8s" and seen["job"]["instance_type"] == "small"
    assert seen["job"]["status"] == "NotStarted"  # no controller here
    assert seen["bad_instance_type"]["target"] == "properties.resources.instanceType"
    assert seen["bad_default"]["target"] == "properties.properties.defaultInstanceType"
    assert seen["bad_resource_id"]["target"] == "properties.resourceId"
    assert seen["bad_quantity"]["target"] == "properties.properties.instanceTypes.x.resources.limits.memory"
    assert seen["bad_left"]  # nothing half-attached
    assert seen["after_detach"]["type"] == "ResourceNotFoundError"
