"""Model assets (ARM), driven in-process through TestClient: versions, containers, archive, stages, models
registered from a job's output, the host path of a model's files, and the refusals."""

import pytest

from emulator.domain.ids import WorkspaceRef
from emulator.errors import NotFound
from emulator.services import assets, models
from tests.service.test_api import ACCOUNT, API, SUB, WS_PATH, assert_arm_error
from tests.service.test_assets import _asset_rows
from tests.service.test_jobs import JOBS, job_body, put_job, ready  # noqa: F401 (fixture)

MODELS = f"{WS_PATH}/models"
WS = WorkspaceRef(SUB, "amlemu", "amlemu")
LONG = f"azureml://subscriptions/{SUB}/resourcegroups/amlemu/workspaces/amlemu/datastores"
FILE_URI = f"{LONG}/workspaceblobstore/paths/LocalUpload/0123abcd/model.pkl"
FOLDER_URI = f"{LONG}/workspaceblobstore/paths/LocalUpload/4567efab/model_dir"


def model_body(uri: str = FILE_URI, **props) -> dict:
    """As SDK 1.35 sends it: stage, flavors and jobName left out when unset."""
    return {"properties": {"modelUri": uri, "modelType": "custom_model", "isAnonymous": False,
                           "isArchived": False, "tags": {}, "properties": {}, **props}}


def put_model(client, auth, name: str, version: str, body: dict, expected: int = 201) -> dict:
    response = client.put(f"{MODELS}/{name}/versions/{version}", params=API, headers=auth, json=body)
    assert response.status_code == expected, response.text
    return response.json()


def versions_of(client, auth, name: str, **params) -> list[str]:
    response = client.get(f"{MODELS}/{name}/versions", params={**API, **params}, headers=auth)
    assert response.status_code == 200, response.text
    return [v["name"] for v in response.json()["value"]]


def container_names(client, auth, **params) -> list[str]:
    response = client.get(MODELS, params={**API, **params}, headers=auth)
    assert response.status_code == 200, response.text
    return [c["name"] for c in response.json()["value"]]


def test_model_version_carries_what_the_sdk_reads(client, auth):
    body = put_model(client, auth, "clf", "1", model_body(description="first"))
    assert body["id"] == f"{MODELS}/clf/versions/1" and body["name"] == "1"
    assert body["type"] == "Microsoft.MachineLearningServices/workspaces/models/versions"
    props = body["properties"]
    assert props["modelUri"] == FILE_URI and props["modelType"] == "custom_model"
    assert props["flavors"] == {} and props["isAnonymous"] is False and props["isArchived"] is False
    assert props["stage"] == "Development" and props["provisioningState"] == "Succeeded"
    assert "jobName" not in props and props["description"] == "first"
    assert client.get(f"{MODELS}/clf/versions/1", params=API, headers=auth).json() == body


@pytest.mark.parametrize("model_type", ["custom_model", "mlflow_model", "triton_model", "MLFlowModel"])
def test_model_types_and_flavors_round_trip(client, auth, model_type):
    flavors = {"python_function": {"data": {"loader_module": "mlflow.sklearn", "python_version": "3.11"}}}
    props = put_model(client, auth, "typed", "1", model_body(FOLDER_URI, modelType=model_type,
                                                            flavors=flavors))["properties"]
    assert (props["modelType"], props["flavors"]) == (model_type, flavors)


def test_versions_latest_next_and_lists(client, auth):
    put_model(client, auth, "clf", "1", model_body())
    put_model(client, auth, "clf", "2", model_body(FOLDER_URI))
    put_model(client, auth, "other", "7", model_body())
    container = client.get(f"{MODELS}/CLF", params=API, headers=auth).json()
    assert container["name"] == "clf"
    assert (container["properties"]["latestVersion"], container["properties"]["nextVersion"]) == ("2", "3")
    assert_arm_error(client.get(f"{MODELS}/none", params=API, headers=auth), 404, target="name")
    # models.get(name, label="latest") asks for the newest one
    assert versions_of(client, auth, "clf", **{"$orderBy": "createdtime desc", "$top": "1"}) == ["2"]
    assert sorted(versions_of(client, auth, "clf")) == ["1", "2"]
    assert sorted(container_names(client, auth)) == ["clf", "other"]


def test_a_version_is_idempotent_but_its_files_and_type_cannot_change(client, auth):
    put_model(client, auth, "clf", "1", model_body())
    again = put_model(client, auth, "clf", "1", model_body(description="now described"), expected=200)
    assert again["properties"]["description"] == "now described"
    for changed, target in ((model_body(FOLDER_URI), "properties.modelUri"),
                            (model_body(modelType="mlflow_model"), "properties.modelType")):
        response = client.put(f"{MODELS}/clf/versions/1", params=API, headers=auth, json=changed)
        assert_arm_error(response, 409, "Conflict", target)
    got = client.get(f"{MODELS}/clf/versions/1", params=API, headers=auth).json()["properties"]
    assert (got["modelUri"], got["modelType"]) == (FILE_URI, "custom_model")


def test_stage_is_kept_and_filters_the_list(client, auth):
    put_model(client, auth, "staged", "1", model_body())
    put_model(client, auth, "staged", "2", model_body(stage="Production"))
    assert versions_of(client, auth, "staged", stage="production") == ["2"]
    assert versions_of(client, auth, "staged", stage="Development") == ["1"]


def test_archive_and_restore_a_version_as_the_sdk_does(client, auth):
    put_model(client, auth, "arch", "1", model_body(stage="Production"))
    put_model(client, auth, "arch", "2", model_body())
    # archive: GET, set isArchived, PUT it back without stage
    got = client.get(f"{MODELS}/arch/versions/1", params=API, headers=auth).json()
    sent = {k: v for k, v in got["properties"].items() if k != "stage"}
    archived = put_model(client, auth, "arch", "1", {"properties": {**sent, "isArchived": True}}, expected=200)
    assert archived["properties"]["isArchived"] is True and archived["properties"]["stage"] == "Production"
    assert versions_of(client, auth, "arch") == ["2"]
    assert versions_of(client, auth, "arch", listViewType="ArchivedOnly") == ["1"]
    assert sorted(versions_of(client, auth, "arch", listViewType="All")) == ["1", "2"]
    put_model(client, auth, "arch", "1", {"properties": {**sent, "isArchived": False}}, expected=200)
    assert sorted(versions_of(client, auth, "arch")) == ["1", "2"]


def test_archive_and_restore_a_whole_model(client, auth):
    put_model(client, auth, "whole", "1", model_body())
    put_model(client, auth, "whole", "2", model_body())
    put_model(client, auth, "kept", "1", model_body())
    container = client.get(f"{MODELS}/whole", params=API, headers=auth).json()
    archived = client.put(f"{MODELS}/whole", params=API, headers=auth,
                          json={"properties": {**container["properties"], "isArchived": True}})
    assert archived.status_code == 200, archived.text
    assert archived.json()["properties"]["isArchived"] is True
    assert container_names(client, auth) == ["kept"]
    assert container_names(client, auth, listViewType="ArchivedOnly") == ["whole"]
    assert versions_of(client, auth, "whole") == []
    assert client.get(f"{MODELS}/whole/versions/2", params=API, headers=auth).status_code == 200  # still usable
    restored = client.put(f"{MODELS}/whole", params=API, headers=auth, json={"properties": {"isArchived": False}})
    assert restored.json()["properties"]["isArchived"] is False
    assert sorted(container_names(client, auth)) == ["kept", "whole"]


def test_models_from_a_jobs_outputs_resolve_to_where_the_files_are(client, auth, ready):  # noqa: F811
    put_job(client, auth, "train-1", job_body(outputs={
        "model": {"jobOutputType": "uri_folder"},
        "placed": {"jobOutputType": "custom_model",
                   "uri": "azureml://datastores/workspaceblobstore/paths/models/placed/"}}))
    artifacts = f"{LONG}/workspaceartifactstore/paths/ExperimentRun/dcid.train-1"
    cases = {
        "azureml://jobs/train-1/outputs/artifacts/paths/outputs/model.pkl": f"{artifacts}/outputs/model.pkl",
        "azureml://jobs/train-1/outputs/artifacts/paths/outputs/": f"{artifacts}/outputs/",
        "runs:/train-1/outputs/model.pkl": f"{artifacts}/outputs/model.pkl",
        "azureml://jobs/train-1/outputs/model": f"{LONG}/workspaceblobstore/paths/azureml/train-1/model/",
        "azureml://jobs/train-1/outputs/placed/paths/weights.bin":
            f"{LONG}/workspaceblobstore/paths/models/placed/weights.bin",
    }
    for version, (uri, resolved) in enumerate(cases.items(), start=1):
        props = put_model(client, auth, "from-job", str(version), model_body(uri))["properties"]
        assert (props["modelUri"], props["jobName"]) == (resolved, "train-1"), uri
    # sent again as first given, it is the same version
    put_model(client, auth, "from-job", "1", model_body(next(iter(cases))), expected=200)


def test_host_path_of_a_models_files(app, client, auth):
    data_dir = app.state.context.settings.data_dir
    put_model(client, auth, "on-disk", "1", model_body())
    put_model(client, auth, "on-disk", "2", model_body(FOLDER_URI + "/"))
    with app.state.context.store.transaction() as repo:
        file_row, folder_row = (assets.get(repo, WS, assets.MODELS, "on-disk", v) for v in ("1", "2"))
        with pytest.raises(NotFound):
            models.host_path(data_dir, WS, file_row)
        relative = models.relative_path(WS, folder_row)
        assert relative.startswith(f"blobs/{ACCOUNT}/azureml-blobstore-")
        assert relative.endswith("/LocalUpload/4567efab/model_dir")
        file = data_dir / models.relative_path(WS, file_row)
        file.parent.mkdir(parents=True)
        file.write_bytes(b"weights")
        (data_dir / relative).mkdir(parents=True)
        assert models.host_path(data_dir, WS, file_row).read_bytes() == b"weights"
        assert models.host_path(data_dir, WS, folder_row).is_dir()


# refusals: 400/404/409 naming the field, and nothing changes
@pytest.fixture(scope="module")
def shared_job(shared):
    """A job and a model version in the module's shared app, for the refusals to name."""
    from tests.service.test_api import cluster

    client, auth = shared.client, shared.auth
    assert client.put(f"{WS_PATH}/computes/cpu", params=API, headers=auth, json=cluster()).status_code == 201
    for path, body in ((f"{WS_PATH}/codes/code1/versions/1", {"properties": {"codeUri": f"https://localhost:8443/blob/{ACCOUNT}/code-1/c"}}),
                       (f"{WS_PATH}/environments/env1/versions/1", {"properties": {"image": "python:3.11-slim"}})):
        assert client.put(path, params=API, headers=auth, json=body).status_code == 201
    put_job(client, auth, "done-1", job_body())
    put_model(client, auth, "existing", "1", model_body())
    return shared


BAD_MODELS = [
    ("m", "1", {}, 400, "properties"),
    ("m", "1", {"properties": "x"}, 400, "properties"),
    ("m", "1", {"properties": {}}, 400, "properties.modelUri"),
    ("m", "1", model_body(""), 400, "properties.modelUri"),
    ("m", "1", model_body(7), 400, "properties.modelUri"),
    ("m", "1", model_body("https://example.com/model.pkl"), 400, "properties.modelUri"),
    ("m", "1", model_body("/home/me/model.pkl"), 400, "properties.modelUri"),
    ("m", "1", model_body("azureml://datastores/nostore/paths/a.pkl"), 400, "properties.modelUri"),
    ("m", "1", model_body(f"{LONG.replace('workspaces/amlemu', 'workspaces/elsewhere')}/workspaceblobstore/paths/a"),
     400, "properties.modelUri"),
    ("m", "1", model_body("azureml://datastores/workspaceblobstore/paths/a/../../b"), 400, "properties.modelUri"),
    ("m", "1", model_body("azureml://jobs/no-such-job/outputs/artifacts/paths/outputs/m.pkl"), 400,
     "properties.modelUri"),
    ("m", "1", model_body("azureml://jobs/done-1/outputs/nosuchoutput"), 400, "properties.modelUri"),
    ("m", "1", model_body("azureml://jobs/done-1/outputs/artifacts/paths/../../x"), 400, "properties.modelUri"),
    ("m", "1", model_body("runs:/no-such-job/model"), 400, "properties.modelUri"),
    ("m", "1", model_body(modelType="onnx_model"), 400, "properties.modelType"),
    ("m", "1", model_body(flavors=["sklearn"]), 400, "properties.flavors"),
    ("m", "1", model_body(flavors={"sklearn": "1.5"}), 400, "properties.flavors.sklearn"),
    ("m", "1", model_body(flavors={"sklearn": {"data": "x"}}), 400, "properties.flavors.sklearn.data"),
    ("m", "1", model_body(stage=3), 400, "properties.stage"),
    ("m", "1", model_body(jobName=["j"]), 400, "properties.jobName"),
    ("m", "1", model_body(tags={"a": {"b": 1}}), 400, "properties.tags.a"),
    ("-bad", "1", model_body(), 400, "name"),
    ("m", "-1", model_body(), 400, "version"),
    ("m", "v" * 200, model_body(), 400, "version"),
    ("existing", "1", model_body(FOLDER_URI), 409, "properties.modelUri"),
    ("existing", "1", model_body(modelType="triton_model"), 409, "properties.modelType"),
]


@pytest.mark.parametrize(("name", "version", "body", "status", "target"), BAD_MODELS)
def test_bad_model_versions_are_refused_and_change_nothing(shared_job, name, version, body, status, target):
    before = _asset_rows(shared_job)
    response = shared_job.client.put(f"{MODELS}/{name}/versions/{version}", params=API, headers=shared_job.auth,
                                     json=body)
    assert_arm_error(response, status, target=target)
    assert _asset_rows(shared_job) == before


@pytest.mark.parametrize(("name", "body", "status", "target"), [
    ("existing", {"properties": {"isArchived": "yes"}}, 400, "properties.isArchived"),
    ("existing", {"properties": {}}, 400, "properties.isArchived"),
    ("existing", {}, 400, "properties"),
    ("absent", {"properties": {"isArchived": True}}, 404, "name"),
])
def test_bad_container_updates_are_refused_and_change_nothing(shared_job, name, body, status, target):
    before = _asset_rows(shared_job)
    response = shared_job.client.put(f"{MODELS}/{name}", params=API, headers=shared_job.auth, json=body)
    assert_arm_error(response, status, target=target)
    assert _asset_rows(shared_job) == before


def test_missing_models_are_404_and_bad_queries_400(shared_job):
    client, auth = shared_job.client, shared_job.auth
    assert_arm_error(client.get(f"{MODELS}/existing/versions/9", params=API, headers=auth), 404, target="version")
    assert_arm_error(client.get(f"{MODELS}/nope", params=API, headers=auth), 404, target="name")
    assert client.get(f"{MODELS}/nope/versions", params=API, headers=auth).json() == {"value": [], "nextLink": None}
    assert_arm_error(client.get(MODELS, params={**API, "listViewType": "Some"}, headers=auth), 400,
                     target="listViewType")
    assert_arm_error(client.get(f"{MODELS}/existing/versions", params={**API, "$top": "0"}, headers=auth), 400,
                     target="$top")
    assert_arm_error(client.get(f"{MODELS}/existing/versions/1", params=API), 401)
