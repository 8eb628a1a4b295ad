"""The real SDK reads the built-in `azureml` registry of a live api process (HTTPS, no Docker) with only the
`amlemu env` variables: MLClient(..., registry_name="azureml") discovers it, gets by label and by version, lists
environments and versions; unknown names, versions and registries are told what there is; writes are refused."""

import json
import subprocess
import sys
from pathlib import Path

from emulator.domain.assets import curated
from tests.service.conftest import clean_env

PROBE = Path(__file__).with_name("registry_probe.py")


def test_sdk_reads_the_curated_environments_through_the_azureml_registry(live_api, tmp_path):
    env = {**clean_env(), **live_api.env_vars()}
    result = subprocess.run([sys.executable, str(PROBE)], env=env, cwd=tmp_path, capture_output=True, text=True,
                            timeout=180)
    assert result.returncode == 0, result.stderr[-3000:]
    seen = json.loads(result.stdout.strip().splitlines()[-1])
    by_label = seen["by_label"]
    assert by_label == seen["by_version"]
    assert (by_label["name"], by_label["version"]) == ("sklearn-1.5", curated.LATEST)
    assert by_label["id"] == f"azureml://registries/azureml/environments/sklearn-1.5/versions/{curated.LATEST}"
    # what a job naming that id builds: the workspace's AzureML-sklearn-1.5 body
    body = curated.environment_body(curated.CATALOGUE["sklearn-1.5"])["properties"]
    assert by_label["image"] == body["image"] == curated.BASE_IMAGE and by_label["tags"] == body["tags"]
    assert "scikit-learn~=1.5.0" in by_label["conda"]["dependencies"][-1]["pip"]
    assert seen["listed"] == sorted(curated.CATALOGUE)
    assert set(seen["list_latest"].values()) == {curated.LATEST}
    assert [(v["name"], v["version"]) for v in seen["versions"]] == [("lightgbm-3.3", v) for v in curated.VERSIONS]
    assert seen["models"] == []
    assert "ResourceNotFound" in seen["unknown_name"] and "sklearn-9.9" in seen["unknown_name"]
    assert all(name in seen["unknown_name"] for name in curated.CATALOGUE)
    assert "ResourceNotFound" in seen["unknown_version"] and "Its versions: 1" in seen["unknown_version"]
    for refused in (seen["create"], seen["archive"]):
        assert "AuthorizationFailed" in refused and "read-only" in refused
    assert "ResourceNotFound" in seen["unknown_registry"] and "'contoso'" in seen["unknown_registry"]


def test_sdk_makes_uses_and_deletes_a_registry_of_its_own(live_api, tmp_path):
    env = {**clean_env(), **live_api.env_vars()}
    result = subprocess.run([sys.executable, str(PROBE.with_name("user_registry_probe.py")), str(tmp_path)], env=env,
                            cwd=tmp_path, capture_output=True, text=True, timeout=240)
    assert result.returncode == 0, result.stderr[-3000:]
    # the JSON is the last line, after the colour codes the SDK's upload progress leaves on stdout
    seen = json.loads(result.stdout[result.stdout.rindex('{"regions"'):])
    assert seen["regions"] == ["westeurope", "eastus"]
    assert seen["listed"] == seen["in_subscription"] == ["probe-reg"]
    assert (seen["latest"], seen["versions"], seen["models"], seen["data"]) == ("2", ["1", "2"], ["clf"], ["rows"])
    assert seen["environments"] == ["env", "team-env"]
    assert seen["shared"] == "azureml://registries/probe-reg/environments/team-env/versions/1"
    assert seen["downloaded"] == ["clf/model.pkl"]
    assert "ResourceNotFound" in seen["unknown_version"] and "'9'" in seen["unknown_version"]
    assert "registryName" in seen["bad_name"] or "Invalid registry name" in seen["bad_name"]
    assert "Conflict" in seen["builtin_name"] and "Azure ML's own" in seen["builtin_name"]
    assert seen["after_delete"] == [] and "ResourceNotFound" in seen["gone"] and "probe-reg" in seen["gone"]
