"""Local compute through the api (TestClient, no controller): a `compute="local"` job as azure-ai-ml sends it is
answered with its `services.Local` endpoint and waits, NotStarted, until its client POSTs the endpoint's body to the
Execution Service route, which answers the zip to invoke and queues the job; wrong callers and bad jobs are refused
naming the field, changing nothing."""

import io
import json
import urllib.parse
import zipfile

import pytest

from emulator.domain.compute import local
from tests.service.test_api import API, RG_PATH, WS_PATH, assert_arm_error
from tests.service.test_jobs import JOBS, job_body, put_job, ready  # noqa: F401 (`ready`: a fixture)
from tests.service.test_pipeline_jobs import components, pipeline_body  # noqa: F401 (`components`: a fixture)
from tests.service.test_roles_api import bearer
from tests.service.test_sweep_jobs import sweep_body

pytestmark = pytest.mark.usefixtures("ready")
LOCAL = {"properties": {"IsLocal": {"IsLocal": True}}}


def local_body(**props) -> dict:
    """As the SDK sends command(..., compute="local"): no computeId, the IsLocal mark in resources."""
    return job_body(computeId=..., resources=LOCAL,
                    environmentVariables={"AZUREML_COMPUTE_USE_COMMON_RUNTIME": "true"}, **props)


def _execution(endpoint: str) -> tuple[str, dict]:
    """What the SDK does with the endpoint: the URL to POST to, and the body."""
    url, encoded = endpoint.split(local.FAKE)
    return url, json.loads(urllib.parse.unquote_plus(encoded))


def _status(client, auth, name: str) -> str:
    return client.get(f"{JOBS}/{name}", params=API, headers=auth).json()["properties"]["status"]


def _submitted(client, auth, name: str) -> tuple[str, dict]:
    props = put_job(client, auth, name, local_body())["properties"]
    assert props["status"] == "NotStarted" and props.get("computeId") is None
    assert props["resources"]["properties"] == LOCAL["properties"]  # the SDK reads compute="local" back from it
    return _execution(props["services"]["Local"]["endpoint"])


def test_a_local_job_waits_for_its_client_which_gets_the_zip_and_queues_it(app, client, auth):
    url, body = _submitted(client, auth, "local-1")
    assert url.startswith(f"https://localhost:8443/execution/v1.0{WS_PATH}/experiments/exp1/localrun?")
    assert body == {"RunId": "local-1", "ExperimentName": "exp1"}
    assert _status(client, auth, "local-1") == "NotStarted"
    answer = client.post(url, headers=auth, json=body)
    assert answer.status_code == 200 and answer.headers["content-type"] == "application/zip"
    archive = zipfile.ZipFile(io.BytesIO(answer.content))
    assert archive.namelist() == ["azureml-setup/Invocation.sh"]
    assert "runs in a container on the machine the emulator runs on" in archive.read(archive.namelist()[0]).decode()
    assert _status(client, auth, "local-1") == "Starting"  # the controller takes it from here
    assert client.post(url, headers=auth, json=body).status_code == 200  # again: the same zip, nothing more
    history = [h["status"] for h in client.get(f"{JOBS}/local-1", params=API, headers=auth).json()["properties"]
               .get("history", [])] or None
    assert history is None  # the history is the emulator's own, never shown
    with app.state.context.store.transaction() as repo:
        job = repo.job(f"{JOBS}/local-1".lower())
        assert [h["status"] for h in job.history] == ["NotStarted", "Starting"]
        assert local.AWAITING not in job.body
        compute = repo.compute(job.compute_key)
        assert compute.name == local.CLUSTER_NAME and compute.body["properties"]["properties"]["vmSize"] == "Local"


def test_the_capacity_is_hidden_and_shared_by_the_workspaces_local_jobs(app, client, auth):
    _submitted(client, auth, "local-a")
    _submitted(client, auth, "local-b")
    listed = client.get(f"{WS_PATH}/computes", params=API, headers=auth).json()["value"]
    assert [c["name"] for c in listed] == ["cpu"]
    assert_arm_error(client.get(f"{WS_PATH}/computes/{local.CLUSTER_NAME}", params=API, headers=auth), 404)
    with app.state.context.store.transaction() as repo:
        keys = {repo.job(f"{JOBS}/{n}".lower()).compute_key for n in ("local-a", "local-b")}
        assert len(keys) == 1 and len(repo.computes()) == 2


def test_the_sdks_second_put_of_what_it_read_keeps_the_job(client, auth):
    url, body = _submitted(client, auth, "local-2")
    client.post(url, headers=auth, json=body)
    read = client.get(f"{JOBS}/local-2", params=API, headers=auth).json()
    read["properties"]["properties"]["ContentSnapshotId"] = "snap"  # what the SDK adds when it has one
    again = put_job(client, auth, "local-2", {"properties": read["properties"]}, 200)["properties"]
    assert again["properties"] == {"ContentSnapshotId": "snap"} and again["status"] == "Starting"


def test_a_token_for_another_workspace_is_refused_and_changes_nothing(client, auth, secret):
    url, body = _submitted(client, auth, "local-3")
    other = bearer(secret, "Contributor", f"{RG_PATH}/workspaces/other")
    response = client.post(url, headers=other, json=body)
    assert_arm_error(response, 403, "AuthorizationFailed")
    assert "workspaces/experiments/runs/write" in response.json()["error"]["message"]
    assert_arm_error(client.post(url, json=body), 401)
    assert _status(client, auth, "local-3") == "NotStarted"
    assert client.post(url, headers=bearer(secret, "Contributor", WS_PATH), json=body).status_code == 200


def test_the_token_azure_ai_ml_asks_for_the_execution_service_is_good_there_only(client, auth, identity_header):
    """azure-ai-ml 1.35 asks it for "{endpoint}/.default" (its ARM client's unformatted base URL)."""
    url, body = _submitted(client, auth, "local-5")
    answer = client.get("/msi/token", params={"resource": "{endpoint}"}, headers=identity_header)
    sdk = {"Authorization": f"Bearer {answer.json()['access_token']}"}
    assert_arm_error(client.get(f"{JOBS}/local-5", params=API, headers=sdk), 401, "InvalidAuthenticationTokenAudience")
    assert client.post(url, headers=sdk, json=body).status_code == 200
    assert _status(client, auth, "local-5") == "Starting"


def test_the_execution_service_refuses_what_it_cannot_start(client, auth):
    url, body = _submitted(client, auth, "local-4")
    put_job(client, auth, "on-cluster", job_body())
    for sent, status, target in (({}, 400, "RunId"), ({"RunId": "on-cluster"}, 400, "RunId"),
                                 ({"RunId": "nope"}, 404, "name")):
        assert_arm_error(client.post(url, headers=auth, json=sent), status, target=target)
    assert client.post(f"{JOBS}/local-4/cancel", params=API, headers=auth).status_code == 200
    assert_arm_error(client.post(url, headers=auth, json=body), 409, target="RunId")  # cancelled before it started
    assert _status(client, auth, "local-4") == "Canceled"


@pytest.mark.parametrize(("props", "target"), [
    ({"resources": {**LOCAL, "instanceCount": 2}}, "properties.resources.instanceCount"),
    ({"distribution": {"distributionType": "PyTorch"}}, "properties.distribution"),
    ({"computeId": "local"}, "properties.computeId")])  # what a sweep's trial sends for compute="local"
def test_bad_local_jobs_are_refused_naming_the_field(app, client, auth, props, target):
    body = local_body()
    body["properties"].update(props)
    error = assert_arm_error(client.put(f"{JOBS}/bad", params=API, headers=auth, json=body), 400, target=target)
    assert "local" in error["message"].lower()
    with app.state.context.store.transaction() as repo:
        assert repo.job(f"{JOBS}/bad".lower()) is None and [c.name for c in repo.computes()] == ["cpu"]


@pytest.mark.usefixtures("ready", "components")
def test_a_pipeline_on_local_compute_is_refused_naming_its_default_compute(client, auth):
    body = pipeline_body(settings={"default_compute": "local", "_source": "YAML.JOB"})
    error = assert_arm_error(client.put(f"{JOBS}/pipe", params=API, headers=auth, json=body), 400,
                             target="properties.settings.default_compute")
    assert "pipeline steps need a compute cluster" in error["message"]
    assert_arm_error(client.get(f"{JOBS}/pipe", params=API, headers=auth), 404)


def test_a_sweep_whose_trials_would_be_local_is_refused(app, client, auth):
    """No client would start its trials: refused, as a sweep naming compute "local" is."""
    response = client.put(f"{JOBS}/sweep", params=API, headers=auth, json=sweep_body(computeId=..., resources=LOCAL))
    error = assert_arm_error(response, 400)
    assert "sweeps, pipeline steps and schedules need a compute cluster" in error["message"]
    assert "IsLocal" in error["target"]
    with app.state.context.store.transaction() as repo:
        assert repo.job(f"{JOBS}/sweep".lower()) is None and [c.name for c in repo.computes()] == ["cpu"]
