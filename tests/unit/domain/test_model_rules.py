"""Model versions: body checks, and the job-output URIs a model is registered from, resolved to datastore URIs."""

import pytest

from emulator.domain.assets import models, versioned
from emulator.domain.ids import WorkspaceRef
from emulator.errors import ValidationFailed

SUB = "00000000-0000-0000-0000-000000000000"
WS = WorkspaceRef(SUB, "rg", "My-Workspace")
LONG = f"azureml://subscriptions/{SUB}/resourcegroups/rg/workspaces/My-Workspace/datastores"
ARTIFACTS = f"{LONG}/workspaceartifactstore/paths/ExperimentRun/dcid.train-1"
OUTPUTS = {"model": {"jobOutputType": "mlflow_model"},
           "placed": {"jobOutputType": "uri_folder", "uri": "azureml://datastores/workspaceblobstore/paths/p/q/"}}


def body(**props) -> dict:
    return {"properties": {"modelUri": "azureml://datastores/workspaceblobstore/paths/m.pkl", **props}}


def test_model_version_defaults_and_what_it_leaves_out():
    spec = versioned.model_version(body())
    assert spec["modelType"] == "custom_model" and spec["flavors"] == {}
    assert spec["isAnonymous"] is False and spec["isArchived"] is False
    # absent, not None: a PUT without them (the SDK's archive drops stage) keeps the stored values
    assert "stage" not in spec and "jobName" not in spec
    assert versioned.model_version(body(stage="Production", jobName="j"))["stage"] == "Production"


@pytest.mark.parametrize("model_type", ["custom_model", "mlflow_model", "triton_model", "CustomModel",
                                        "MLFlowModel", "TritonModel", "MLFLOW_MODEL"])
def test_model_types_in_the_sdks_and_the_rest_apis_spelling_are_kept_as_sent(model_type):
    assert versioned.model_version(body(modelType=model_type))["modelType"] == model_type


def test_flavors_keep_only_their_data():
    spec = versioned.model_version(body(flavors={"sklearn": {"data": {"v": "1.5"}, "extra": 1}, "bare": {}}))
    assert spec["flavors"] == {"sklearn": {"data": {"v": "1.5"}}, "bare": {"data": {}}}


@pytest.mark.parametrize(("props", "target"), [
    ({"modelUri": None}, "properties.modelUri"),
    ({"modelUri": "  "}, "properties.modelUri"),
    ({"modelType": "onnx"}, "properties.modelType"),
    ({"modelType": 1}, "properties.modelType"),
    ({"flavors": "sklearn"}, "properties.flavors"),
    ({"flavors": {"sklearn": None}}, "properties.flavors.sklearn"),
    ({"flavors": {"sklearn": {"data": [1]}}}, "properties.flavors.sklearn.data"),
    ({"stage": 1}, "properties.stage"),
    ({"jobName": {}}, "properties.jobName"),
])
def test_bad_model_bodies_name_the_field(props, target):
    with pytest.raises(ValidationFailed) as refused:
        versioned.model_version(body(**props))
    assert refused.value.target == target


def test_container_archive_reads_only_is_archived():
    assert versioned.container_archived({"properties": {"isArchived": True, "latestVersion": "3"}}) is True
    assert versioned.container_archived({"properties": {"isArchived": False}}) is False
    for bad, target in (({"properties": {}}, "properties.isArchived"), ({}, "properties"), ([], "body")):
        with pytest.raises(ValidationFailed) as refused:
            versioned.container_archived(bad)
        assert refused.value.target == target


def test_a_container_is_archived_when_all_its_versions_are():
    assert versioned.all_archived([{"isArchived": True}, {"isArchived": True}])
    assert not versioned.all_archived([{"isArchived": True}, {"isArchived": False}])
    assert not versioned.all_archived([{}])


@pytest.mark.parametrize(("uri", "expected"), [
    ("azureml://jobs/train-1/outputs/artifacts/paths/outputs/model.pkl",
     models.JobSource("train-1", "artifacts", "outputs/model.pkl")),
    ("azureml://jobs/train-1/outputs/artifacts", models.JobSource("train-1", "artifacts", "")),
    ("azureml://jobs/train-1/outputs/model", models.JobSource("train-1", "model", "")),
    ("azureml://jobs/train-1/outputs/model/", models.JobSource("train-1", "model", "")),
    ("azureml://jobs/train-1/outputs/model/paths/sub/w.bin", models.JobSource("train-1", "model", "sub/w.bin")),
    ("runs:/train-1/model", models.JobSource("train-1", "artifacts", "model")),
    ("azureml://datastores/workspaceblobstore/paths/m.pkl", None),
    (f"{LONG}/workspaceblobstore/paths/m.pkl", None),
])
def test_job_source_tells_a_jobs_output_from_a_datastore_path(uri, expected):
    assert models.job_source(uri) == expected


@pytest.mark.parametrize("uri", ["https://acct.blob.core.windows.net/c/m.pkl", "./model.pkl", "file:///m.pkl"])
def test_anything_but_azureml_uris_is_refused(uri):
    with pytest.raises(ValidationFailed) as refused:
        models.job_source(uri)
    assert refused.value.target == "properties.modelUri" and "azureml://jobs/" in refused.value.message


@pytest.mark.parametrize(("uri", "resolved"), [
    ("azureml://jobs/x/outputs/artifacts/paths/outputs/model.pkl", f"{ARTIFACTS}/outputs/model.pkl"),
    ("azureml://jobs/x/outputs/artifacts/paths/outputs/", f"{ARTIFACTS}/outputs/"),
    ("azureml://jobs/x/outputs/artifacts", f"{ARTIFACTS}/"),
    ("runs:/x/model", f"{ARTIFACTS}/model"),
    # a named output at Azure's default place, or where the job put it
    ("azureml://jobs/x/outputs/model", f"{LONG}/workspaceblobstore/paths/azureml/train-1/model/"),
    ("azureml://jobs/x/outputs/placed/paths/w.bin", f"{LONG}/workspaceblobstore/paths/p/q/w.bin"),
])
def test_job_outputs_resolve_to_long_datastore_uris(uri, resolved):
    # the stored job's name wins over the URI's spelling of it (names match without case)
    assert models.job_output_uri(WS, "train-1", OUTPUTS, models.job_source(uri)) == resolved


@pytest.mark.parametrize("uri", ["azureml://jobs/x/outputs/nope", "azureml://jobs/x/outputs/artifacts/paths/a/../../b"])
def test_unknown_outputs_and_escaping_paths_are_refused(uri):
    with pytest.raises(ValidationFailed) as refused:
        models.job_output_uri(WS, "train-1", OUTPUTS, models.job_source(uri))
    assert refused.value.target == "properties.modelUri"


def test_an_unknown_output_lists_the_jobs_outputs():
    with pytest.raises(ValidationFailed, match="model, placed"):
        models.job_output_uri(WS, "train-1", OUTPUTS, models.JobSource("train-1", "weights", ""))
