"""Pipelines' parallel steps: a `parallel` component's spec as the SDK registers it (checked, naming the field), and a
parallel step made the command job that runs the parallel runner (its own settings over its component's)."""

import pytest

from emulator.domain.assets import components
from emulator.domain.jobs import command_job, parallel, pipeline, pipeline_steps
from emulator.errors import ValidationFailed

SPEC = components.SPEC
WS = "/subscriptions/s/resourceGroups/rg/providers/Microsoft.MachineLearningServices/workspaces/ws"
CODE, ENV = f"azureml:{WS}/codes/c/versions/1", f"azureml:{WS}/environments/e/versions/1"


def spec(task: dict | None = None, **fields) -> dict:
    """What parallel_run_function(...) registers (captured from the SDK's _to_rest_object)."""
    return {"name": "score_files", "type": "parallel", "is_deterministic": True,
            "inputs": {"job_data_path": {"type": "uri_folder"}, "model": {"type": "uri_folder", "optional": True}},
            "outputs": {"job_output_path": {"type": "uri_folder"}}, "resources": {"instance_count": 2},
            "logging_level": "DEBUG", "mini_batch_size": "3", "input_data": "${{inputs.job_data_path}}",
            "retry_settings": {"timeout": 60, "max_retries": 2}, "max_concurrency_per_instance": 2,
            "error_threshold": 5, "mini_batch_error_threshold": 5, "_source": "BUILDER",
            "task": {"type": "run_function", "code": CODE, "entry_script": "score.py", "environment": ENV,
                     "program_arguments": "--model ${{inputs.model}} --x 1",
                     "append_row_to": "${{outputs.job_output_path}}", **(task or {})}, **fields}


def registered(**fields) -> dict:
    body = {"properties": {"componentSpec": spec(**fields), "isAnonymous": True}}
    return components.version_body(body, "azureml_anonymous", "hash")


def test_a_parallel_component_is_kept_and_runs_with_its_task_s_code_and_environment():
    stored = registered()
    found = components.spec_of(stored)
    assert found.code_id == CODE[len("azureml:"):] and found.environment_id == ENV[len("azureml:"):]
    assert found.parallel["mini_batch_size"] == "3" and found.parallel["task"]["entry_script"] == "score.py"
    assert components.runs_with(stored["componentSpec"]) == (CODE, ENV, f"{SPEC}.task")


@pytest.mark.parametrize(("fields", "target"), [
    ({"task": {"entry_script": None}}, "task.entry_script"),
    ({"task": {"entry_script": "  "}}, "task.entry_script"),
    ({"task": {"environment": None}}, "task.environment"),
    ({"task": {"type": "function"}}, "task.type"),
    ({"task": {"append_row_to": "${{outputs.nope}}"}}, "task.append_row_to"),
    ({"task": {"program_arguments": "--m ${{inputs.modle}}"}}, "task.program_arguments"),
    ({"mini_batch_size": "10tb"}, "mini_batch_size"),
    ({"mini_batch_size": "ten"}, "mini_batch_size"),
    ({"input_data": "${{inputs.other}}"}, "input_data"),
    ({"input_data": None}, "input_data"),
    ({"error_threshold": -2}, "error_threshold"),
    ({"mini_batch_error_threshold": "x"}, "mini_batch_error_threshold"),
    ({"max_concurrency_per_instance": 0}, "max_concurrency_per_instance"),
    ({"retry_settings": {"max_retries": -1}}, "retry_settings.max_retries"),
    ({"retry_settings": {"timeout": "soon"}}, "retry_settings.timeout"),
    ({"logging_level": "LOUD"}, "logging_level"),
    ({"partition_keys": '["store"]'}, "partition_keys"),
])
def test_a_parallel_component_that_could_not_run_is_refused_naming_the_field(fields, target):
    task = fields.pop("task", None)
    with pytest.raises(ValidationFailed) as caught:
        registered(task=task, **fields)
    assert caught.value.target == f"{SPEC}.{target}"


def step(**more) -> dict:
    """The step the SDK sends for it in properties.jobs (captured), bound to the pipeline's input and output."""
    return {"type": "parallel", "componentId": f"{WS}/components/azureml_anonymous/versions/hash",
            "resources": {"instance_count": 2}, "error_threshold": 5, "mini_batch_error_threshold": 5,
            "environment_variables": {"A": "1"}, "max_concurrency_per_instance": 2,
            "task": spec()["task"], "input_data": "${{inputs.job_data_path}}",
            "inputs": {"job_data_path": {"value": "${{parent.inputs.data}}", "job_input_type": "literal"},
                       "model": {"value": "${{parent.inputs.model}}", "job_input_type": "literal"}},
            "outputs": {"job_output_path": {"value": "${{parent.outputs.out}}", "type": "literal"}},
            "retry_settings": {"timeout": 60, "max_retries": 2}, "logging_level": "DEBUG", "mini_batch_size": 3,
            **more}


def child(step_body: dict, component_fields: dict | None = None) -> dict:
    props, parsed = pipeline.parse({"properties": {
        "jobType": "Pipeline", "jobs": {"score": step_body},
        "inputs": {"data": {"jobInputType": "mltable", "uri": "azureml://datastores/d/paths/t/", "mode": "Direct"},
                   "model": {"jobInputType": "uri_folder", "uri": "azureml://datastores/d/paths/m/"}},
        "outputs": {"out": {"jobOutputType": "uri_folder"}}}})
    component = components.spec_of(registered(**(component_fields or {})))
    return pipeline_steps.child_body(parsed, props, "score", component, {"score": "child-s"}, "p")


def test_a_parallel_step_s_child_runs_the_runner_with_the_step_s_settings():
    body = child(step(mini_batch_size=10240, retry_settings={"timeout": 5, "max_retries": 1}))
    props, spec_ = command_job.parse(body)
    assert spec_.instance_count == 2 and spec_.environment_variables == {"A": "1"}
    assert spec_.inputs["job_data_path"]["mode"] == "ReadOnlyMount"  # an mltable's direct, mounted for the runner
    command = spec_.command
    assert command.startswith(f"python {parallel.RUNNER} --input ${{{{inputs.job_data_path}}}} --input-type mltable")
    for part in ("--concurrency 2", "--max-retries 1", "--timeout 5", "--error-threshold 5",
                 "--mini-batch-error-threshold 5", "--logging-level DEBUG", "--mini-batch-size 10240",
                 "--entry-script score.py", "--output ${{outputs.job_output_path}}",
                 f"--output-file-name {parallel.STEP_OUTPUT_FILE}"):
        assert part in command
    assert command.endswith("-- --model ${{inputs.model}} --x 1")
    assert props["codeId"] == CODE[len("azureml:"):]


def test_the_component_s_settings_and_azure_s_defaults_fill_what_the_step_leaves_out():
    bare = {k: v for k, v in step().items() if k not in ("mini_batch_size", "retry_settings", "logging_level",
                                                        "error_threshold", "max_concurrency_per_instance")}
    bare["task"] = {k: v for k, v in bare["task"].items() if k != "append_row_to"}
    command = child(bare, {"mini_batch_size": None, "retry_settings": None, "logging_level": None,
                           "max_concurrency_per_instance": None, "task": {"append_row_to": None}})["properties"]["command"]
    for part in ("--mini-batch-size 10", "--max-retries 2", "--timeout 60", "--logging-level INFO",
                 "--error-threshold 5", "--concurrency 1"):  # the component's error_threshold, the rest Azure's
        assert part in command
    assert "--output " not in command  # no append_row_to: summary only


def test_a_step_s_task_may_repeat_its_component_s_code_and_environment_in_any_form():
    """A job file's inline step carries its task as written (a local code path, an inline environment)."""
    inline = {**spec()["task"], "code": "./src", "environment": {"image": "python:3.11-slim"}}
    props = child(step(task=inline))["properties"]
    assert props["codeId"] == CODE[len("azureml:"):] and props["environmentId"] == ENV[len("azureml:"):]


def test_a_step_and_its_component_must_be_of_one_kind():
    with pytest.raises(ValidationFailed) as caught:
        child(step(type="command"))
    assert caught.value.target == "properties.jobs.score.type"


def test_a_step_s_own_bad_settings_are_said_of_the_step():
    with pytest.raises(ValidationFailed) as caught:
        child(step(mini_batch_size="lots"))
    assert caught.value.target == "properties.jobs.score.mini_batch_size"
