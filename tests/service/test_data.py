"""Data assets (ARM), driven in-process through TestClient: versions at datastore paths whose files must fit
their type, containers, archive, and job inputs naming a data asset."""

from pathlib import Path

import pytest

from emulator.domain.ids import WorkspaceRef
from emulator.domain.jobs import command_job
from emulator.domain.storage import datastores
from emulator.store.tables import AssetVersion, Job
from tests.service.test_api import API, SUB, WS_PATH, assert_arm_error
from tests.service.test_jobs import JOBS, job_body, put_job, ready  # noqa: F401 (fixture)

DATA = f"{WS_PATH}/data"
REF = WorkspaceRef(SUB, "amlemu", "amlemu")
STORE = "azureml://datastores/workspaceblobstore/paths"
FOLDER, FILE, TABLE = f"{STORE}/up/folder/", f"{STORE}/up/one.csv", f"{STORE}/up/table"


@pytest.fixture
def files(settings) -> Path:
    """A folder, a file and an mltable folder in the workspace's default datastore."""
    store = next(d for d in datastores.defaults(REF) if d.is_default)
    root = settings.data_dir / "blobs" / store.account / store.container / "up"
    (root / "folder").mkdir(parents=True)
    (root / "folder" / "a.csv").write_text("a\n1\n")
    (root / "one.csv").write_text("x\n42\n")
    (root / "table").mkdir()
    (root / "table" / "MLTable").write_text("paths:\n  - file: ./rows.csv\n")
    (root / "bare").mkdir()
    return root


def data_body(data_type: str = "uri_folder", uri: str = FOLDER, **props) -> dict:
    """As SDK 1.35 sends it."""
    return {"properties": {"dataType": data_type, "dataUri": uri, "isAnonymous": False, "isArchived": False,
                           "tags": {}, "properties": {}, **props}}


def put_data(client, auth, name: str, version: str, body: dict, expected: int = 201) -> dict:
    response = client.put(f"{DATA}/{name}/versions/{version}", params=API, headers=auth, json=body)
    assert response.status_code == expected, response.text
    return response.json()


def _rows(app, table) -> list[tuple]:
    with app.state.context.store.transaction() as repo:
        return sorted((r.key, r.body) for r in repo.session.query(table).all())


@pytest.mark.usefixtures("files")
def test_data_versions_containers_and_archive(client, auth):
    body = put_data(client, auth, "rows", "1", data_body(description="first"))
    assert body["id"] == f"{DATA}/rows/versions/1" and body["name"] == "1"
    assert body["type"] == "Microsoft.MachineLearningServices/workspaces/data/versions"
    assert body["properties"]["dataType"] == "uri_folder" and body["properties"]["dataUri"] == FOLDER
    assert client.get(f"{DATA}/rows/versions/1", params=API, headers=auth).json() == body
    put_data(client, auth, "rows", "1", data_body(description="same files"), expected=200)  # idempotent
    put_data(client, auth, "rows", "2", data_body("uri_file", FILE))
    put_data(client, auth, "table", "1", data_body("mltable", TABLE, referencedUris=["./rows.csv"]))
    conflict = client.put(f"{DATA}/rows/versions/1", params=API, headers=auth, json=data_body("uri_file", FILE))
    assert_arm_error(conflict, 409, target="properties.dataUri")
    # the SDK resolves azureml:rows@latest by reading the container under the prefixed name
    container = client.get(f"{DATA}/azureml:rows", params=API, headers=auth).json()
    assert container["name"] == "rows" and container["properties"]["latestVersion"] == "2"
    assert container["properties"]["nextVersion"] == "3" and container["properties"]["dataType"] == "uri_file"
    listed = client.get(f"{DATA}/rows/versions", params={**API, "$orderBy": "createdtime desc"}, headers=auth)
    assert [v["name"] for v in listed.json()["value"]] == ["2", "1"]
    archived = client.put(f"{DATA}/table", params=API, headers=auth, json={"properties": {"isArchived": True}})
    assert archived.status_code == 200 and archived.json()["properties"]["isArchived"] is True
    names = [c["name"] for c in client.get(DATA, params=API, headers=auth).json()["value"]]
    assert names == ["rows"]
    every = client.get(DATA, params={**API, "listViewType": "All"}, headers=auth).json()["value"]
    assert sorted(c["name"] for c in every) == ["rows", "table"]


@pytest.mark.usefixtures("files")
@pytest.mark.parametrize(("body", "why"), [
    (data_body("uri_file", FOLDER), "it is a folder"),
    (data_body("uri_folder", FILE), "it is a file"),
    (data_body("mltable", f"{STORE}/up/bare"), "MLTable"),
    (data_body("uri_folder", f"{STORE}/up/missing/"), "no folder"),
    (data_body("uri_folder", "azureml://datastores/elsewhere/paths/up/folder/"), "elsewhere"),
    (data_body("uri_folder", "https://example.com/folder/"), "datastore URI"),
])
def test_a_data_path_that_does_not_hold_its_type_is_400_and_stores_nothing(app, client, auth, body, why):
    response = client.put(f"{DATA}/rows/versions/1", params=API, headers=auth, json=body)
    error = assert_arm_error(response, 400, target="properties.dataUri")
    assert why in error["message"]
    assert _rows(app, AssetVersion) == []


@pytest.mark.parametrize(("body", "target"), [
    ({"properties": {"dataUri": FOLDER}}, "properties.dataType"),
    (data_body("table"), "properties.dataType"),
    ({"properties": {"dataType": "uri_folder"}}, "properties.dataUri"),
    (data_body(tags={"t": None}), "properties.tags.t"),
    (data_body(referencedUris="x"), "properties.referencedUris"),
])
def test_malformed_data_versions_are_400_naming_the_field(shared, body, target):
    before = _rows(shared.app, AssetVersion)
    response = shared.client.put(f"{DATA}/rows/versions/1", params=API, headers=shared.auth, json=body)
    assert_arm_error(response, 400, target=target)
    assert _rows(shared.app, AssetVersion) == before


def _input_job(client, auth, name: str, uri: str, kind: str = "uri_folder", expected: int = 201) -> dict:
    inputs = {"data": {"jobInputType": kind, "uri": uri}}
    return put_job(client, auth, name, job_body(command="ls ${{inputs.data}}", inputs=inputs), expected)


@pytest.mark.usefixtures("ready", "files")
@pytest.mark.parametrize("named", [
    f"{DATA}/rows/versions/1",  # azureml:rows:1, as the SDK sends it
    f"{DATA}/azureml:rows/versions/1",  # azureml:rows@latest, as the SDK sends it
    "azureml:rows:1", "azureml:rows@latest"])
def test_a_job_input_naming_a_data_asset_reads_its_files(app, client, auth, named):
    put_data(client, auth, "rows", "1", data_body())
    put_data(client, auth, "rows", "2", data_body("uri_file", FILE))
    client.put(f"{DATA}/rows/versions/2", params=API, headers=auth, json={
        **data_body("uri_file", FILE), "properties": {**data_body("uri_file", FILE)["properties"], "isArchived": True}})
    shown = _input_job(client, auth, "reader", named)
    assert shown["properties"]["inputs"]["data"]["uri"] == named  # as the user sent it
    assert command_job.RESOLVED_INPUTS not in shown["properties"]
    with app.state.context.store.transaction() as repo:
        stored = repo.job(REF.child_id("jobs", "reader")).body
    assert command_job.input_uri(stored, "data") == FOLDER  # version 1; 2 is archived, so not @latest


@pytest.mark.usefixtures("ready", "files")
@pytest.mark.parametrize(("uri", "why"), [
    (f"{DATA}/nope/versions/1", "'nope'"),
    (f"{DATA}/rows/versions/9", "no version '9'"),
    ("azureml:nope@latest", "'nope' was not found"),
    (f"{STORE}/up/missing/", "nothing is stored"),
])
def test_an_unknown_data_input_is_400_naming_it_and_creates_nothing(app, client, auth, uri, why):
    put_data(client, auth, "rows", "1", data_body())
    response = client.put(f"{JOBS}/reader", params=API, headers=auth,
                          json=job_body(command="ls ${{inputs.data}}",
                                        inputs={"data": {"jobInputType": "uri_folder", "uri": uri}}))
    error = assert_arm_error(response, 400, target="properties.inputs.data.uri")
    assert why in error["message"]
    assert _rows(app, Job) == []


@pytest.mark.usefixtures("ready", "files")
def test_a_datastore_input_that_is_there_is_taken_as_given(client, auth):
    shown = _input_job(client, auth, "plain", FILE, kind="uri_file")
    assert shown["properties"]["inputs"]["data"]["uri"] == FILE


@pytest.mark.usefixtures("ready")
@pytest.mark.parametrize("uri", ["azureml://datastores/workspaceblobstore/paths/../../../etc",
                                 "azureml://datastores/workspaceblobstore/paths/data/../../token.key"])
def test_a_data_path_or_download_input_climbing_out_of_the_datastore_is_refused(app, client, auth, uri):
    assert_arm_error(client.put(f"{DATA}/escape/versions/1", params=API, headers=auth, json=data_body(uri=uri)),
                     400, target="properties.dataUri")
    bad = job_body(inputs={"data": {"jobInputType": "uri_folder", "uri": uri, "mode": "Download"}},
                   command="ls ${{inputs.data}}")
    assert_arm_error(client.put(f"{JOBS}/escape", params=API, headers=auth, json=bad), 400,
                     target="properties.inputs.data.uri")
    assert not any("/data/escape/" in key for key, _ in _rows(app, AssetVersion)) and _rows(app, Job) == []


@pytest.mark.usefixtures("ready")
def test_a_job_input_naming_another_jobs_output_reads_where_it_was_written(app, client, auth):
    put_job(client, auth, "maker", job_body(command="echo", outputs={"made": {"jobOutputType": "uri_folder"}}))
    _input_job(client, auth, "user", "azureml://jobs/maker/outputs/made/paths/rows.csv", kind="uri_file")
    _input_job(client, auth, "logs", "azureml://jobs/maker/outputs/artifacts/paths/outputs/")
    with app.state.context.store.transaction() as repo:
        read = command_job.input_uri(repo.job(REF.child_id("jobs", "user")).body, "data")
        logs = command_job.input_uri(repo.job(REF.child_id("jobs", "logs")).body, "data")
    assert read.endswith("/paths/azureml/maker/made/rows.csv"), read
    assert logs.endswith("/paths/ExperimentRun/dcid.maker/outputs/"), logs


@pytest.mark.usefixtures("ready")
@pytest.mark.parametrize(("uri", "why"), [
    ("azureml://jobs/nobody/outputs/made", "job 'nobody', which was not found"),
    ("azureml://jobs/maker/outputs/other/paths/x", "has no output named 'other'"),
    ("azureml://jobs/maker/outputs/made/paths/../../../../etc", ""),
])
def test_a_job_input_naming_a_missing_or_escaping_job_output_is_400(app, client, auth, uri, why):
    put_job(client, auth, "maker", job_body(command="echo", outputs={"made": {"jobOutputType": "uri_folder"}}))
    response = client.put(f"{JOBS}/reader", params=API, headers=auth,
                          json=job_body(command="ls ${{inputs.data}}",
                                        inputs={"data": {"jobInputType": "uri_folder", "uri": uri}}))
    assert why in assert_arm_error(response, 400, target="properties.inputs.data.uri")["message"]
    assert [key for key, _ in _rows(app, Job)] == [REF.child_id("jobs", "maker").lower()]


@pytest.mark.usefixtures("ready")
def test_a_jobs_experiment_is_the_workspaces_from_its_first_job_under_a_guid(app, client, auth):
    from emulator.domain.jobs import tracking
    from emulator.store.tables import TrackedExperiment

    for name, experiment in (("a", "train"), ("b", "train"), ("c", "Default")):
        put_job(client, auth, name, job_body(command="echo", experimentName=experiment))
    rows = sorted((r.key, r.name, r.mlflow_id) for r in _all(app, TrackedExperiment))
    assert rows == sorted((TrackedExperiment.key_of(REF.key, tracking.experiment_guid(REF.key, name)), name, None)
                          for name in ("train", "Default"))  # MLflow's own id comes when MLflow makes it


def _all(app, table) -> list:
    with app.state.context.store.transaction() as repo:
        return list(repo.session.query(table).all())
