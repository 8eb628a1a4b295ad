"""Pipelines' parallel steps through the api (TestClient, no controller): a `parallel` component registered as
parallel_run_function registers it, a pipeline with a parallel step stored, its step made (as the controller makes
it) the command job that runs the parallel runner, and parallel steps that could not run refused naming the field,
with nothing created."""

import pytest

from emulator.domain.ids import WorkspaceRef
from emulator.domain.jobs import artifacts, parallel
from emulator.domain.storage import datastores
from tests.service.test_api import API, SUB, WS_PATH, assert_arm_error
from tests.service.test_jobs import CODE_ID, ENV_ID, HISTORY, JOBS, job_names, put_job, ready  # noqa: F401
from tests.service.test_pipeline_jobs import _controller_pass, literal

pytestmark = pytest.mark.usefixtures("ready", "data")
SCORER = f"{WS_PATH}/components/azureml_anonymous/versions/scorer1"
DATA = "azureml://datastores/workspaceblobstore/paths/images/"


@pytest.fixture
def data(settings):
    """Files to score where the pipeline's input says."""
    where = datastores.resolve_uri(WorkspaceRef(SUB, "amlemu", "amlemu"), DATA, "data")
    folder = settings.data_dir / artifacts.blob_dir(where)
    folder.mkdir(parents=True)
    (folder / "a.png").write_text("a")


def task(**more) -> dict:
    return {"type": "run_function", "code": f"azureml:{CODE_ID}", "entry_script": "score.py",
            "environment": f"azureml:{ENV_ID}", "program_arguments": "--threshold 0.5",
            "append_row_to": "${{outputs.scores}}", **more}


def component(**more) -> dict:
    """As parallel_run_function(...) registers it (the SDK's _to_rest_object, captured)."""
    spec = {"name": "score_files", "type": "parallel", "is_deterministic": True,
            "inputs": {"images": {"type": "uri_folder"}}, "outputs": {"scores": {"type": "uri_folder"}},
            "resources": {"instance_count": 2}, "logging_level": "INFO", "mini_batch_size": "5",
            "input_data": "${{inputs.images}}", "retry_settings": {"timeout": 30, "max_retries": 1},
            "max_concurrency_per_instance": 2, "error_threshold": -1, "mini_batch_error_threshold": 3,
            "task": task(), "_source": "BUILDER", **more}
    return {"properties": {"componentSpec": spec, "isAnonymous": True}}


def put_component(client, auth, body: dict, url: str = SCORER):
    return client.put(url, params=API, headers=auth, json=body)


def pipeline(**step_fields) -> dict:
    step = {"type": "parallel", "componentId": SCORER, "resources": {"instance_count": 2},
            "max_concurrency_per_instance": 2, "mini_batch_size": 5, "input_data": "${{inputs.images}}",
            "retry_settings": {"timeout": 30, "max_retries": 1}, "logging_level": "INFO", "task": task(),
            "inputs": {"images": literal("${{parent.inputs.images}}")},
            "outputs": {"scores": {"type": "literal", "value": "${{parent.outputs.scores}}"}}, **step_fields}
    return {"properties": {"jobType": "Pipeline", "experimentName": "batch", "displayName": "p",
                           "inputs": {"images": {"jobInputType": "uri_folder", "uri": DATA}},
                           "outputs": {"scores": {"jobOutputType": "uri_folder"}},
                           "settings": {"default_compute": f"{WS_PATH}/computes/cpu"}, "jobs": {"score": step}}}


def test_a_parallel_step_s_child_runs_the_runner_on_its_instances(app, client, auth):
    assert put_component(client, auth, component()).status_code == 201
    stored = client.get(SCORER, params=API, headers=auth).json()["properties"]["componentSpec"]
    assert stored["type"] == "parallel" and stored["task"]["entry_script"] == "score.py"
    put_job(client, auth, "pipe-par", pipeline())
    _controller_pass(app)
    children = client.get(f"{HISTORY}/runs/pipe-par/children", params=API, headers=auth).json()["value"]
    assert [c["displayName"] for c in children] == ["score"]
    child = client.get(f"{JOBS}/{children[0]['runId']}", params=API, headers=auth).json()["properties"]
    assert child["jobType"] == "Command" and child["resources"]["instanceCount"] == 2
    assert child["codeId"] == CODE_ID and child["environmentId"] == ENV_ID
    assert child["command"].startswith(f"python {parallel.RUNNER} --input ${{{{inputs.images}}}}")
    for part in ("--concurrency 2", "--max-retries 1", "--timeout 30", "--mini-batch-error-threshold 3",
                 "--mini-batch-size 5", "--entry-script score.py", "--output ${{outputs.scores}}",
                 "-- --threshold 0.5"):
        assert part in child["command"]
    assert child["outputs"]["scores"]["uri"] == artifacts.output_uri("pipe-par", "scores", {})  # the pipeline's


@pytest.mark.parametrize(("spec", "target"), [
    ({"task": task(entry_script=None)}, "properties.componentSpec.task.entry_script"),
    ({"mini_batch_size": "10tb"}, "properties.componentSpec.mini_batch_size"),
    ({"task": task(environment=f"azureml:{WS_PATH}/environments/nope/versions/1")},
     "properties.componentSpec.task.environment"),
    ({"task": task(code=f"azureml:{WS_PATH}/codes/nope/versions/1")}, "properties.componentSpec.task.code"),
])
def test_a_parallel_component_that_could_not_run_is_refused_naming_the_field(client, auth, spec, target):
    url = f"{WS_PATH}/components/azureml_anonymous/versions/bad1"
    assert_arm_error(put_component(client, auth, component(**spec), url), 400, target=target)
    assert_arm_error(client.get(url, params=API, headers=auth), 404)


@pytest.mark.parametrize(("step", "target"), [
    ({"mini_batch_size": "lots"}, "properties.jobs.score.mini_batch_size"),
    ({"input_data": "${{inputs.nope}}"}, "properties.jobs.score.input_data"),
    ({"error_threshold": -5}, "properties.jobs.score.error_threshold"),
    ({"type": "command"}, "properties.jobs.score.type"),
    ({"partition_keys": '["store"]'}, "properties.jobs.score.partition_keys"),
])
def test_a_parallel_step_that_could_not_run_is_refused_naming_it(client, auth, step, target):
    assert put_component(client, auth, component()).status_code == 201
    assert_arm_error(client.put(f"{JOBS}/bad-par", params=API, headers=auth, json=pipeline(**step)), 400,
                     target=target)
    assert job_names(client, auth, listViewType="All") == []
