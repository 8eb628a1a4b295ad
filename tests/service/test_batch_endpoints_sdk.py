"""The real SDK drives batch endpoints in a live api process (HTTPS, no Docker, no controller) with only the
`amlemu env` variables: endpoint and deployment CRUD (a scoring script; an MLflow model without one), the default
deployment, invoke with a local folder, a datastore file, a data asset and an output location, list_jobs of the
endpoint and of a deployment, jobs.get of a batch job, and refusals naming the field."""

import json
import subprocess
import sys
from pathlib import Path

from tests.service.conftest import clean_env

PROBE = Path(__file__).with_name("batch_probe.py")


def test_sdk_creates_invokes_and_lists_batch_endpoints(live_api, tmp_path):
    env = {**clean_env(), **live_api.env_vars()}
    result = subprocess.run([sys.executable, str(PROBE), str(tmp_path)], env=env, cwd=tmp_path, capture_output=True,
                            text=True, timeout=240)
    assert result.returncode == 0, result.stderr[-3000:]
    seen = json.loads(result.stdout[result.stdout.rindex('{"crud"'):])  # after the uploads' progress bars
    crud = seen["crud"]
    auth_mode, scoring_uri, state, description = crud["endpoint"]
    assert (auth_mode, state, description) == ("aad_token", "Succeeded", "d")
    assert scoring_uri == f"{live_api.url}/subscriptions/{live_api.subscription}/resourceGroups/" \
        f"{live_api.resource_group}/providers/Microsoft.MachineLearningServices/workspaces/{live_api.workspace}" \
        "/batchEndpoints/scorer/jobs"
    state, compute, *settings, script = crud["deployment"]
    assert state == "Succeeded" and compute.endswith("/computes/cpu") and script == "score.py"
    assert settings == [2, 2, "append_row", "predictions.csv", -1, 1, 45, {"A": "1"}]
    assert crud["mlflow"] == ["Succeeded", None, 10] and crud["deployments"] == ["blue", "mlflow"]
    assert crud["no_default"] is None and crud["default"] == "blue" and crud["listed"] == ["scorer"]
    assert crud["invoke_no_default"].startswith("400") and "Target: properties.defaults.deploymentName" in \
        crud["invoke_no_default"]
    assert "Target: properties.compute" in crud["missing_compute"] and "'gpu'" in crud["missing_compute"]
    piped = seen["pipeline"]
    assert piped["pipeline"] == ["pipe", "cpu", "PipelineComponent"]
    assert "Target: properties.deploymentConfiguration.componentId.assetId" in piped["not_a_pipeline"]
    assert "Target: properties.inputData.input_data" in piped["missing_input"]
    kind, status, job_type, steps, mode, output = piped["pipeline_job"]
    assert (kind, status, job_type, steps, mode) == ("PipelineJob", "NotStarted", "azureml.pipelinejob", ["prep_job"],
                                                     "fast")
    assert output.endswith("pipe-out/") and piped["pipeline_listed"] == [piped["pipeline_job_name"]]
    invoked = seen["invoke"]
    names = {invoked[kind]["name"] for kind in ("folder", "file", "asset")}
    assert all(n.startswith("batchjob-") for n in names) and len(names) == 3
    assert {invoked[kind]["status"] for kind in ("folder", "file", "asset")} == {"NotStarted"}
    assert "Target: properties.inputData.UriFolder.uri" in invoked["empty"]
    assert set(invoked["listed"]) == names and invoked["by_mlflow"] == [invoked["file"]["name"]]
    kind, status, tags, experiment = invoked["job"]
    assert (kind, status, experiment) == ("PipelineJob", "NotStarted", "scorer")
    assert tags["azureml.batchrun"] == "true" and tags["azureml.deploymentname"] == "blue"
    deleted = seen["delete"]
    assert deleted["delete_default"].startswith("409") and deleted["after"] == [] and deleted["jobs_stay"] == 4
