"""How the MLflow server's answers become Azure's: run ids renamed both ways, a job's run told its job's status,
artifact URIs in RunHistory, registry sources, MLflow workspace names."""

import re

import pytest

from emulator.domain.jobs import tracking

WS = "/subscriptions/s/resourceGroups/rg/providers/Microsoft.MachineLearningServices/workspaces/w"


def test_run_ids_are_found_and_renamed_at_any_depth_and_nothing_else_changes():
    message = {"run_id": "job-a", "metrics": [{"key": "run_id", "value": 1}],
               "runs": [{"info": {"run_uuid": "job-b", "run_name": "job-a"}}]}
    assert tracking.run_ids(message) == {"job-a", "job-b"}
    renamed = tracking.renamed(message, {"job-a": "m1", "job-b": "m2"})
    assert renamed == {"run_id": "m1", "metrics": [{"key": "run_id", "value": 1}],
                       "runs": [{"info": {"run_uuid": "m2", "run_name": "job-a"}}]}
    assert tracking.renamed(message, {}) == message


def test_experiment_ids_are_guids_of_workspace_and_name_renamed_with_the_runs():
    guid = tracking.experiment_guid("/SUBSCRIPTIONS/S/x", "train")
    assert guid == tracking.experiment_guid("/subscriptions/s/x", "train") != tracking.experiment_guid("/s/y", "train")
    assert guid != tracking.experiment_guid("/subscriptions/s/x", "Train")  # MLflow's names keep their case
    search = {"experiment_ids": [guid, "0"], "filter": "run_id = 'job-a'",
              "runs": [{"info": {"run_id": "job-a", "experiment_id": guid}}]}
    assert tracking.experiment_ids(search) == {guid, "0"}
    assert tracking.renamed(search, {"job-a": "m1"}, {guid: "7"}) == {
        "experiment_ids": ["7", "0"], "filter": "run_id = 'job-a'",
        "runs": [{"info": {"run_id": "m1", "experiment_id": "7"}}]}
    params = [("experiment_id", guid), ("run_id", "job-a"), ("max_results", "5")]
    assert tracking.renamed_params(params, {"job-a": "m1"}, {guid: "7"}) == [
        ("experiment_id", "7"), ("run_id", "m1"), ("max_results", "5")]


def test_a_jobs_run_is_told_its_jobs_status_and_times_and_every_run_its_runhistory_artifacts():
    info = {"run_id": "job-a", "experiment_id": "3", "lifecycle_stage": "active", "status": "RUNNING",
            "start_time": 1, "artifact_uri": "/unused/3/x/artifacts"}
    found = tracking.run_infos({"run": {"info": info, "data": {}}})
    assert found == [info]
    tracking.told(info, lambda e, r: tracking.artifact_uri("api:8443", WS, e, r),
                  {"status": "Completed", "start_time": 10, "end_time": 20})
    assert info["status"] == "FINISHED" and (info["start_time"], info["end_time"]) == (10, 20)
    assert info["artifact_uri"] == f"azureml://api:8443/mlflow/v2.0{WS}/experiments/3/runs/job-a/artifacts"
    other = {"run_id": "m9", "experiment_id": "3", "lifecycle_stage": "active", "status": "RUNNING"}
    tracking.told(other, lambda e, r: f"{e}/{r}", None)  # no job behind it: its own status stays
    assert other["status"] == "RUNNING" and other["artifact_uri"] == "3/m9"


def test_job_statuses_map_to_mlflow_run_statuses():
    assert [tracking.run_status(s) for s in ("NotStarted", "Queued", "Running", "Completed", "Failed", "Canceled")] \
        == ["SCHEDULED", "SCHEDULED", "RUNNING", "FINISHED", "FAILED", "KILLED"]


def test_the_tracking_uri_is_the_azureml_form_the_plugin_reads():
    assert tracking.tracking_uri("localhost:8443", WS) == f"azureml://localhost:8443/mlflow/v1.0{WS}"


def test_mlflow_workspace_names_are_valid_and_the_same_for_every_spelling():
    name = tracking.mlflow_workspace(WS)
    assert name == tracking.mlflow_workspace(WS.upper()) and re.fullmatch(r"[a-z0-9-]{1,63}", name)
    assert name != tracking.mlflow_workspace(WS + "2")


def test_registry_routes_and_sources():
    assert tracking.registry_route("/api/2.0/mlflow/model-versions/create") == "model-versions/create"
    assert tracking.registry_route("/api/2.0/mlflow/runs/get") is None
    uri = tracking.artifact_uri("api:8443", WS, "3", "job-a") + "/model"
    assert tracking.model_source(uri) == "runs:/job-a/model"
    assert tracking.model_source("runs:/job-a/model") == "runs:/job-a/model"


def test_only_mlflows_tracking_routes_are_passed_on():
    assert tracking.forwarded("/api/2.0/mlflow/runs/log-metric")
    assert tracking.forwarded("/api/2.0/preview/mlflow/runs/log-batch-async")
    for path in ("/api/3.0/mlflow/workspaces", "/api/3.0/mlflow/workspaces/aml-other",  # MLflow's workspace CRUD
                 "/api/2.0/mlflow/../../3.0/mlflow/workspaces", "/api/2.0/mlflow/./runs/get",
                 "/api/2.0/mlflow-artifacts/artifacts/x", "/api/2.0/mlflow/runs/get%2F..", "/api/2.0/mlflow/",
                 "/api/2.0/mlflow//runs", "/graphql"):
        assert not tracking.forwarded(path), path


def test_registry_search_filters_as_azure_takes_them():
    models = [{"name": "iris", "run_id": "job-a"}, {"name": "Iris-big", "run_id": "job-b"},
              {"name": "wine", "tags": [{"key": "mlflow.prompt.is_prompt", "value": "true"}, {"key": "t", "value": "1"}]}]

    def kept(text: str) -> list[str]:
        return [m["name"] for m in models if tracking.search_filter(text)(m)]
    assert kept("") == ["iris", "Iris-big", "wine"]
    assert kept("name = 'iris'") == ["iris"] and kept('name="wine"') == ["wine"]
    assert kept("name LIKE 'iris%'") == ["iris"] and kept("name ILIKE 'iris%'") == ["iris", "Iris-big"]
    assert kept("name != 'iris' AND run_id = 'job-b'") == ["Iris-big"]
    assert kept("name LIKE 'w_ne'") == ["wine"] and kept("name LIKE 'a.*'") == []
    assert kept("tag.`mlflow.prompt.is_prompt` != 'true'") == ["iris", "Iris-big"]  # what MLflow's client adds
    assert kept("tags.t = '1' AND name LIKE '%'") == ["wine"]
    for bad in ("tags.x > 'y'", "name = iris", "name > 'a'", "params.x = '1'"):
        with pytest.raises(ValueError, match="unsupported filter"):
            tracking.search_filter(bad)
