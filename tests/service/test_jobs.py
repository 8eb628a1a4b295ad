"""Jobs (ARM) and RunHistory, driven in-process through TestClient: no controller runs, so jobs stay where
the api puts them; the controller's part is tested in tests/integration and tests/e2e."""

import pytest

from emulator.domain.ids import WorkspaceRef
from emulator.domain.storage import blob_access
from emulator.services import assets as asset_service
from tests.service.test_api import API, SUB, WS_PATH, assert_arm_error, cluster, put_cluster
from tests.service.test_assets import CODES, ENVIRONMENTS, code_body, env_body
from tests.waiting import wait_until

JOBS = f"{WS_PATH}/jobs"
HISTORY = f"/history/v1.0{WS_PATH}"
CODE_ID = f"{CODES}/code1/versions/1"
ENV_ID = f"{ENVIRONMENTS}/env1/versions/1"


@pytest.fixture
def ready(client, auth):
    """A cluster, a code version and an environment version for jobs to name."""
    put_cluster(client, auth, "cpu", cluster(max_nodes=2))
    assert client.put(CODE_ID, params=API, headers=auth, json=code_body()).status_code == 201
    assert client.put(ENV_ID, params=API, headers=auth, json=env_body()).status_code == 201


def job_body(**props) -> dict:
    body = {"jobType": "Command", "displayName": "hello", "experimentName": "exp1",
            "command": "python main.py --x ${{inputs.x}} --out ${{outputs.model}}",
            "codeId": CODE_ID, "environmentId": ENV_ID, "computeId": f"{WS_PATH}/computes/cpu",
            "inputs": {"x": {"jobInputType": "literal", "value": "3"}},
            "outputs": {"model": {"jobOutputType": "uri_folder", "mode": "ReadWriteMount"}},
            "environmentVariables": {"A": "1"}, "resources": {"instanceCount": 1, "properties": {}},
            "properties": {}, "tags": {"t": "v"}, "isArchived": False}
    body.update(props)
    return {"properties": {k: v for k, v in body.items() if v is not ...}}


def put_job(client, auth, name: str, body: dict, expected: int = 201) -> dict:
    response = client.put(f"{JOBS}/{name}", params=API, headers=auth, json=body)
    assert response.status_code == expected, response.text
    return response.json()


def job_names(client, auth, **params) -> list[str]:
    response = client.get(JOBS, params={**API, **params}, headers=auth)
    assert response.status_code == 200, response.text
    return [j["name"] for j in response.json()["value"]]


def test_submit_get_list(client, auth, ready):
    body = put_job(client, auth, "job-1", job_body())
    props = body["properties"]
    assert body["id"] == f"{JOBS}/job-1" and body["name"] == "job-1"
    assert props["status"] == "NotStarted" and props["command"].startswith("python main.py --x ${{inputs.x}}")
    assert props["computeId"] == f"{WS_PATH}/computes/cpu" and props["environmentVariables"] == {"A": "1"}
    assert props["services"]["Studio"]["jobServiceType"] == "Studio"
    assert "default" not in props["outputs"]  # then jobs.stream reads RunHistory, not the datastore
    got = client.get(f"{JOBS}/job-1", params=API, headers=auth)
    assert got.status_code == 200 and got.json() == body
    put_job(client, auth, "job-2", job_body(isArchived=True))
    assert job_names(client, auth) == ["job-1"]
    assert sorted(job_names(client, auth, listViewType="All")) == ["job-1", "job-2"]


def test_resubmitting_may_change_tags_only(client, auth, ready):
    put_job(client, auth, "job-1", job_body())
    assert put_job(client, auth, "job-1", job_body(tags={"t": "w"}), 200)["properties"]["tags"] == {"t": "w"}
    assert_arm_error(client.put(f"{JOBS}/job-1", params=API, headers=auth, json=job_body(command="echo other")),
                     409, target="properties.command")
    assert client.get(f"{JOBS}/job-1", params=API, headers=auth).json()["properties"]["command"] \
        == job_body()["properties"]["command"]


BAD_JOBS = [
    (job_body(computeId=f"{WS_PATH}/computes/nope"), "properties.computeId"),
    # serverless (no computeId): the tier and the VM size are checked, and the quota
    (job_body(computeId=..., queueSettings={"jobTier": "Cheap"}), "properties.queueSettings.jobTier"),
    (job_body(queueSettings={"jobTier": "spot"}), "properties.queueSettings.jobTier"),
    (job_body(computeId=..., resources={"instanceType": "Standard_Nope"}), "properties.resources.instanceType"),
    (job_body(computeId=..., resources={"instanceType": "Standard_DS3_v2", "instanceCount": 7}),
     "properties.resources.instanceCount"),
    (job_body(command="echo ${{inputs.missing}}"), "properties.command"),
    (job_body(command="echo ${{outputs.nothing}}"), "properties.command"),
    (job_body(command=""), "properties.command"),
    (job_body(environmentId=f"{ENVIRONMENTS}/nope/versions/1"), "properties.environmentId"),
    (job_body(environmentId="azureml://registries/contoso/environments/sklearn-1.5/versions/1"),
     "properties.environmentId"),
    (job_body(environmentId="not-an-id"), "properties.environmentId"),
    (job_body(codeId=f"{CODES}/nope/versions/1"), "properties.codeId"),
    (job_body(jobType="AutoML"), "properties.jobType"),
    (job_body(inputs={"x": {"jobInputType": "tensor", "value": "3"}}), "properties.inputs.x.jobInputType"),
    (job_body(inputs={"x": {"jobInputType": "literal", "value": 3}}), "properties.inputs.x.value"),
    (job_body(inputs={"x": {"jobInputType": "uri_folder"}}), "properties.inputs.x.uri"),
    (job_body(inputs={"x": {"jobInputType": "uri_folder", "uri": "https://example.com/data"}}),
     "properties.inputs.x.uri"),
    (job_body(inputs={"x": {"jobInputType": "uri_folder", "uri": "azureml://datastores/nope/paths/a"}}),
     "properties.inputs.x.uri"),
    (job_body(inputs={"bad-name": {"jobInputType": "literal", "value": "1"}}), "properties.inputs.bad-name"),
    (job_body(resources={"instanceCount": 3}), "properties.resources.instanceCount"),
    (job_body(resources={"instanceCount": 0}), "properties.resources.instanceCount"),
    (job_body(environmentVariables={"A": 1}), "properties.environmentVariables.A"),
    (job_body(distribution={"distributionType": "Ray"}), "properties.distribution.distributionType"),
    (job_body(distribution={"distributionType": "PyTorch", "processCountPerInstance": 2}),
     "properties.distribution.processCountPerInstance"),
    (job_body(limits={"jobLimitsType": "Command", "timeout": "soon"}), "properties.limits.timeout"),
    ({"properties": "x"}, "properties"),
]


@pytest.mark.parametrize(("body", "target"), BAD_JOBS)
def test_bad_jobs_are_refused_and_change_nothing(client, auth, ready, body, target):
    response = client.put(f"{JOBS}/bad-job", params=API, headers=auth, json=body)
    assert_arm_error(response, 400, target=target)
    assert_arm_error(client.get(f"{JOBS}/bad-job", params=API, headers=auth), 404)
    assert job_names(client, auth, listViewType="All") == []


def test_bad_job_name_and_missing_job(client, auth, ready):
    assert_arm_error(client.put(f"{JOBS}/-bad", params=API, headers=auth, json=job_body()), 400, target="name")
    assert_arm_error(client.get(f"{JOBS}/nope", params=API, headers=auth), 404)
    assert_arm_error(client.post(f"{JOBS}/nope/cancel", params=API, headers=auth), 404)


def test_cancel_before_anything_runs_is_immediate(client, auth, ready):
    put_job(client, auth, "job-1", job_body())
    response = client.post(f"{JOBS}/job-1/cancel", params=API, headers=auth)
    assert response.status_code == 200
    assert client.get(f"{JOBS}/job-1", params=API, headers=auth).json()["properties"]["status"] == "Canceled"
    # Cancelling an ended job changes nothing and is no error.
    assert client.post(f"{JOBS}/job-1/cancel", params=API, headers=auth).status_code == 200


def test_run_history_details_and_discovery(client, auth, ready):
    put_job(client, auth, "job-1", job_body())
    discovery = client.get("/discovery")
    assert discovery.status_code == 200 and discovery.json()["api"] == "https://localhost:8443"
    details = client.get(f"{HISTORY}/runs/job-1/details", headers=auth)
    assert details.status_code == 200, details.text
    assert details.json()["status"] == "NotStarted" and details.json()["logFiles"] == {}
    data = client.post(f"{HISTORY}/rundata", headers=auth, json={"runId": "job-1"})
    assert data.status_code == 200 and data.json()["runMetadata"]["runId"] == "job-1"
    assert_arm_error(client.get(f"{HISTORY}/runs/nope/details", headers=auth), 404)
    assert client.get(f"{HISTORY}/runs/job-1/details").status_code == 401


def test_job_routes_need_a_token(client, ready):
    assert_arm_error(client.put(f"{JOBS}/j", params=API, json=job_body()), 401)
    assert_arm_error(client.get(JOBS, params=API), 401)


def test_jobs_of_another_subscription_are_not_found(client, auth, ready):
    other = JOBS.replace(SUB, "11111111-1111-1111-1111-111111111111")
    assert_arm_error(client.put(f"{other}/j", params=API, headers=auth, json=job_body()), 404)


def test_run_data_lists_outputs_the_data_plane_resolves(client, auth, ready):
    put_job(client, auth, "my_job_1", job_body())
    outputs = client.post(f"{HISTORY}/rundata", headers=auth, json={"runId": "my_job_1"}).json()["runMetadata"][
        "outputs"]
    assert list(outputs) == ["model"] and outputs["model"]["type"] == "uri_folder"
    asset_id = outputs["model"]["assetId"]
    resolved = client.post(f"/data/v1.0{WS_PATH}/dataversion/batchGetResolvedUris", headers=auth,
                           json={"values": [asset_id, "azureml://locations/local/workspaces/x/data/nope/versions/1"]})
    assert resolved.status_code == 200, resolved.text
    assert resolved.json() == {"values": {asset_id: {
        "uri": "azureml://datastores/workspaceblobstore/paths/azureml/my_job_1/model/", "type": "uri_folder"}}}
    bad = client.post(f"/data/v1.0{WS_PATH}/dataversion/batchGetResolvedUris", headers=auth, json={"values": "x"})
    assert_arm_error(bad, 400, target="values")


def test_deleting_the_workspace_cancels_its_jobs_drops_its_assets_and_takes_down_its_computes(client, auth, ready, app):
    put_job(client, auth, "doomed", job_body())
    data_dir = app.state.context.settings.data_dir
    account = data_dir / "blobs" / blob_access.workspace_account(WorkspaceRef.from_key(WS_PATH.lower()))
    (account / "azureml").mkdir(parents=True, exist_ok=True)
    (account / "azureml" / "upload.bin").write_bytes(b"x")
    assert client.delete(WS_PATH, params=API, headers=auth).status_code == 200
    assert not account.exists()  # its storage goes with it: nothing left for a workspace made again by that name
    wait_until(lambda: not any((data_dir / "blobs.tmp").glob("dropped-*")), timeout=30,
               message="the dropped account to be deleted")
    with app.state.context.store.transaction() as repo:  # the controller's view: it cleans up from here
        (job,) = repo.orphan_jobs()
        assert (job.name, job.status) == ("doomed", "Canceled")
        assert job.history[-1]["message"] == "The workspace was deleted."
        assert not repo.all_asset_versions(WS_PATH.lower())
        assert [c.provisioning_state for c in repo.computes(WS_PATH.lower())] == ["Deleting"]


@pytest.mark.parametrize("named", ["azureml:AzureML-sklearn-1.5@latest",
                                   "azureml://registries/azureml/environments/sklearn-1.5/labels/latest"])
def test_a_curated_environment_becomes_the_workspaces_azureml_version_of_it(client, auth, ready, named):
    body = put_job(client, auth, "curated", job_body(environmentId=named))
    assert body["properties"]["environmentId"] == f"{ENVIRONMENTS}/AzureML-sklearn-1.5/versions/1"
    env = client.get(f"{ENVIRONMENTS}/AzureML-sklearn-1.5/versions/1", params=API, headers=auth)
    assert env.status_code == 200 and "scikit-learn~=1.5.0" in env.json()["properties"]["condaFile"]


def test_an_unknown_curated_environment_lists_the_known_ones_and_changes_nothing(client, auth, ready):
    response = client.put(f"{JOBS}/curated", params=API, headers=auth,
                          json=job_body(environmentId="azureml:AzureML-sklearn-9@latest"))
    assert_arm_error(response, 400, target="properties.environmentId")
    assert "sklearn-1.5" in response.json()["error"]["message"]
    assert client.get(f"{ENVIRONMENTS}/AzureML-sklearn-9/versions/1", params=API, headers=auth).status_code == 404


def test_a_curated_environment_reads_before_any_job_used_it(client, auth):
    version = client.get(f"{ENVIRONMENTS}/AzureML-lightgbm-3.3/versions/1", params=API, headers=auth)
    assert version.status_code == 200 and "lightgbm~=3.3.5" in version.json()["properties"]["condaFile"]
    listed = client.get(f"{ENVIRONMENTS}/AzureML-sklearn-1.5/versions", params=API, headers=auth)
    assert [v["name"] for v in listed.json()["value"]] == ["1"]
    assert client.get(f"{ENVIRONMENTS}/AzureML-sklearn-1.5", params=API, headers=auth).status_code == 200
    assert client.get(f"{ENVIRONMENTS}/AzureML-nope/versions/1", params=API, headers=auth).status_code == 404


def test_an_output_named_as_an_asset_is_checked_at_submit(client, auth, ready):
    taken = {"properties": {"dataType": "uri_folder",
                            "dataUri": "azureml://datastores/workspaceblobstore/paths/LocalUpload/x/"}}
    with client.app.state.context.store.transaction() as repo:  # a version already there (made without files)
        asset_service.put(repo, WorkspaceRef(SUB, "amlemu", "amlemu"), asset_service.DATA, "rows", "1", taken,
                   client.app.state.context.clock())
    taken_output = {"model": {"jobOutputType": "uri_folder", "assetName": "rows", "assetVersion": "1"}}
    assert_arm_error(client.put(f"{JOBS}/named-out", params=API, headers=auth, json=job_body(outputs=taken_output)),
                     400, target="properties.outputs.model.assetVersion")
    bad_name = {"model": {"jobOutputType": "uri_folder", "assetName": "no spaces"}}
    assert_arm_error(client.put(f"{JOBS}/named-out", params=API, headers=auth, json=job_body(outputs=bad_name)),
                     400, target="properties.outputs.model.assetName")
    fine = {"model": {"jobOutputType": "uri_folder", "assetName": "rows", "assetVersion": "2"}}
    assert put_job(client, auth, "named-out", job_body(outputs=fine))["properties"]["outputs"]["model"][
        "assetName"] == "rows"
