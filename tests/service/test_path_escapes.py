"""Asset URIs and job inputs that would lead out of the workspace's own storage (into the CA folder, the
database, another workspace's account) are refused with a 400 naming the field, and nothing is stored.
Deployments refuse code and models whose folders pass through a link a job planted."""

import os

import pytest

from emulator.domain.storage import datastores
from emulator.store.tables import AssetVersion, Job, OnlineDeployment
from tests.service.test_api import ACCOUNT, API, assert_arm_error
from tests.service.test_assets import CODES, ENVIRONMENTS
from tests.service.test_jobs import JOBS, job_body, ready  # noqa: F401 (fixture)
from tests.service.test_models import MODELS
from tests.service.test_online_endpoints import ENDPOINTS, REF, deployment_body, endpoint_body, setup_assets
from tests.unit.domain.test_asset_uris import ESCAPES

DATASTORE_ESCAPES = [
    "azureml://datastores/workspaceblobstore/paths/../../../ca",
    "azureml://datastores/workspaceblobstore/paths/a/../../../../amlemu.db",
    "azureml://datastores/workspaceartifactstore/paths/ExperimentRun/..\\..\\..\\ca",
    "azureml://datastores/workspaceblobstore/paths/a/./b",
    "azureml://datastores/workspaceblobstore/paths/a\x00/b",
    "azureml://jobs/done-1/outputs/artifacts/paths/../../../../ca/ca.key",
    "/var/lib/amlemu/ca",
    "file:///var/lib/amlemu/amlemu.db",
    f"https://localhost:8443/blob/{ACCOUNT}/azureml/../../../ca",
    "../ca",
]


def _rows(app, table) -> list:
    with app.state.context.store.transaction() as repo:
        return [(r.key, r.body) for r in repo.session.query(table).all()]


@pytest.mark.parametrize("uri", ESCAPES)
def test_code_versions_leaving_the_workspace_storage_are_refused(shared, uri):
    before = _rows(shared.app, AssetVersion)
    response = shared.client.put(f"{CODES}/escape/versions/1", params=API, headers=shared.auth,
                                 json={"properties": {"codeUri": uri, "isAnonymous": True}})
    assert_arm_error(response, 400, target="properties.codeUri")
    assert _rows(shared.app, AssetVersion) == before


@pytest.mark.parametrize("uri", ESCAPES[:12])
def test_build_contexts_leaving_the_workspace_storage_are_refused(shared, uri):
    before = _rows(shared.app, AssetVersion)
    response = shared.client.put(f"{ENVIRONMENTS}/escape/versions/1", params=API, headers=shared.auth,
                                 json={"properties": {"build": {"contextUri": uri}}})
    assert_arm_error(response, 400, target="properties.build.contextUri")
    assert _rows(shared.app, AssetVersion) == before


@pytest.mark.parametrize("uri", DATASTORE_ESCAPES)
def test_model_versions_leaving_the_workspace_storage_are_refused(shared, uri):
    before = _rows(shared.app, AssetVersion)
    response = shared.client.put(f"{MODELS}/escape/versions/1", params=API, headers=shared.auth,
                                 json={"properties": {"modelUri": uri, "modelType": "custom_model"}})
    assert_arm_error(response, 400, target="properties.modelUri")
    assert _rows(shared.app, AssetVersion) == before


def test_percent_encoded_dots_in_a_datastore_path_are_a_name_inside_it(client, auth):
    """azureml:// paths are not percent-decoded: '%2e%2e' is a folder of that name, inside the datastore."""
    uri = "azureml://datastores/workspaceblobstore/paths/%2e%2e/%2E%2e/model"
    response = client.put(f"{MODELS}/dots/versions/1", params=API, headers=auth,
                          json={"properties": {"modelUri": uri, "modelType": "custom_model"}})
    assert response.status_code == 201, response.text
    where = datastores.resolve_uri(REF, response.json()["properties"]["modelUri"], "modelUri")
    assert where.account == ACCOUNT and where.blob == "%2e%2e/%2E%2e/model"


@pytest.mark.usefixtures("ready")
@pytest.mark.parametrize("kind", ["inputs", "outputs"])
@pytest.mark.parametrize("uri", DATASTORE_ESCAPES)
def test_job_inputs_and_outputs_leaving_the_workspace_storage_are_refused(client, auth, kind, uri):
    before = _rows(client.app, Job)
    entry = {"jobInputType": "uri_folder", "uri": uri} if kind == "inputs" else \
        {"jobOutputType": "uri_folder", "uri": uri, "mode": "ReadWriteMount"}
    response = client.put(f"{JOBS}/escape", params=API, headers=auth,
                          json=job_body(command="python main.py", **{kind: {"data": entry}}))
    assert_arm_error(response, 400, target=f"properties.{kind}.data.uri")
    assert _rows(client.app, Job) == before


@pytest.mark.parametrize(("planted", "target"), [
    ("model", "properties.model"),
    ("code", "properties.codeConfiguration.codeId"),
])
def test_deployments_refuse_code_and_models_reached_through_a_link(app, client, auth, planted, target):
    """A job's outputs registered as a model (or code) may hold links; the model server must not mount the
    emulator's own folders through them."""
    setup_assets(app, client, auth)
    data = app.state.context.settings.data_dir
    (data / "ca").mkdir()
    (data / "ca" / "ca.key").write_text("PRIVATE KEY")
    folder = data / ("blobs/" + ACCOUNT + "/code-1/src" if planted == "code" else
                     str(next(p for p in (data / "blobs" / ACCOUNT).glob("azureml-blobstore-*/LocalUpload/h/model"))
                         .relative_to(data)))
    for child in folder.iterdir():
        child.unlink()
    folder.rmdir()
    os.symlink(data / "ca", folder)
    if planted == "code":
        (data / "ca" / "score.py").write_text("def init(): pass\ndef run(d): return d\n")
    assert client.put(f"{ENDPOINTS}/ep-one", params=API, headers=auth, json=endpoint_body()).status_code == 201
    response = client.put(f"{ENDPOINTS}/ep-one/deployments/blue", params=API, headers=auth, json=deployment_body())
    assert_arm_error(response, 400, target=target)
    assert _rows(client.app, OnlineDeployment) == []
