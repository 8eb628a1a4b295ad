"""The tracking URI refuses what is not MLflow's tracking API before anything reaches the MLflow server (none runs
here: a forwarded call would answer 503), and takes no token but a management one or the workspace's own jobs'."""

import time
from urllib.parse import urlsplit

import pytest

from emulator import tokens
from tests.service.conftest import RESOURCE

WS = "/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/amlemu/providers/" \
     "Microsoft.MachineLearningServices/workspaces/amlemu"


@pytest.mark.parametrize("path", ["3.0/mlflow/workspaces", "3.0/mlflow/workspaces/aml-someone-else",
                                  "2.0/mlflow/../../3.0/mlflow/workspaces", "2.0/mlflow/%2e%2e/%2e%2e/3.0/x",
                                  "2.0/mlflow-artifacts/artifacts/secret"])
@pytest.mark.parametrize("method", ["GET", "DELETE"])
def test_routes_beyond_mlflows_tracking_api_are_404(client, auth, path, method):
    answer = client.request(method, f"/mlflow/v2.0{WS}/api/{path}", headers=auth)
    assert answer.status_code == 404, answer.text


def test_a_scoring_token_or_another_workspaces_job_token_is_refused(client, secret):
    scoring, _ = tokens.issue(secret, tokens.SCORING_AUDIENCE)
    other = tokens.issue_run_token(secret, WS.lower() + "-other", "job-a", int(time.time()))
    for token in (scoring, other):
        answer = client.get(f"/mlflow/v2.0{WS}/api/2.0/mlflow/runs/get", params={"run_id": "job-a"},
                            headers={"Authorization": f"Bearer {token}"})
        assert answer.status_code == 401, answer.text


ARTIFACTS = f"/history/v1.0{WS}/experiments/e/runs/job-a/artifacts"


@pytest.mark.parametrize("path", ["../job-b/outputs/x", "a/../../../token.key", "/etc/passwd", "a//b", "./a", ""])
def test_an_artifact_path_climbing_out_of_its_run_is_refused(client, auth, path):
    answer = client.post(f"{ARTIFACTS}/batch/metadata", headers=auth, json={"paths": [{"path": path}]})
    assert answer.status_code == 400, answer.text
    assert client.get(f"{ARTIFACTS}/contentinfo", params={"path": path}, headers=auth).status_code in (400, 422)


def test_an_upload_url_opens_its_one_blob_for_writing_and_nothing_else(client, auth):
    answer = client.post(f"{ARTIFACTS}/batch/metadata", headers=auth, json={"paths": [{"path": "model/MLmodel"}]})
    url = urlsplit(answer.json()["artifactContentInformation"]["model/MLmodel"]["contentUri"])
    assert url.path.endswith("/ExperimentRun/dcid.job-a/model/MLmodel") and "sr=b" in url.query
    headers = {"host": url.netloc, "x-ms-blob-type": "BlockBlob"}  # host-style, as the plugin sends it
    assert client.put(f"{url.path}?{url.query}", content=b"x", headers=headers).status_code == 201
    for other in (url.path.replace("model/MLmodel", "model/other"), url.path.replace("dcid.job-a", "dcid.job-b")):
        answer = client.put(f"{other}?{url.query}", content=b"x", headers=headers)
        assert answer.status_code == 403, answer.text


OTHER = WS.replace("/workspaces/amlemu", "/workspaces/other")


def test_a_token_for_one_workspace_opens_its_tracking_and_run_artifacts_not_anothers(client, auth, secret):
    """`amlemu token --workspace amlemu`: its role holds in that workspace's data plane only; a job's run token
    of one workspace is no key to another's either."""
    assert client.put(OTHER, params={"api-version": "2024-10-01"}, headers=auth,
                      json={"location": "local"}).status_code in (200, 201)
    scoped, _ = tokens.issue_for_role(secret, RESOURCE, "alice", "Owner", WS)
    job_token = tokens.issue_run_token(secret, WS.lower(), "job-a", int(time.time()))
    for token in (scoped, job_token):
        headers = {"Authorization": f"Bearer {token}"}
        own = client.get(f"/history/v1.0{WS}/experiments/e/runs/job-a/artifacts", headers=headers)
        assert own.status_code not in (401, 403), own.text  # let in (its run has no files yet)
        theirs = client.get(f"/history/v1.0{OTHER}/experiments/e/runs/job-a/artifacts", headers=headers)
        assert theirs.status_code == (403 if token == scoped else 401), theirs.text
        mlflow = client.get(f"/mlflow/v2.0{OTHER}/api/2.0/mlflow/runs/get", params={"run_id": "job-a"}, headers=headers)
        assert mlflow.status_code == (403 if token == scoped else 401), mlflow.text
        uploads = client.post(f"/history/v1.0{OTHER}/experiments/e/runs/job-a/artifacts/batch/metadata",
                              headers=headers, json={"paths": [{"path": "x.txt"}]})
        assert uploads.status_code in (401, 403), uploads.text
    refused = client.get(f"/mlflow/v2.0{OTHER}/api/2.0/mlflow/runs/get", params={"run_id": "job-a"},
                         headers={"Authorization": f"Bearer {scoped}"}).json()["error"]
    assert refused["code"] == "AuthorizationFailed" and OTHER in refused["message"]
