"""The parallel interface batch jobs and parallel steps share: settings checked, and the command job they make."""

from dataclasses import replace

import pytest

from emulator.domain.jobs import command_job, parallel
from emulator.domain.jobs.parallel import ParallelSettings
from emulator.errors import ValidationFailed

SETTINGS = ParallelSettings(entry_script="score.py", mini_batch_size=10, mini_batch_bytes=None, instance_count=2,
                            max_concurrency_per_instance=3, max_retries=3, timeout_seconds=30, error_threshold=-1,
                            mini_batch_error_threshold=-1, logging_level="INFO", output_action=parallel.APPEND_ROW,
                            output_file_name="predictions.csv", program_arguments="")
ARM = "/subscriptions/s/resourceGroups/r/providers/Microsoft.MachineLearningServices/workspaces/w"


@pytest.mark.parametrize(("value", "expected"), [
    (10, (10, None)), ("10", (10, None)), ("10kb", (None, 10 * 1024)), ("1MB", (None, 1024 ** 2)),
    ("2gb", (None, 2 * 1024 ** 3)), (" 3 ", (3, None))])
def test_a_mini_batch_size_is_a_count_or_a_size(value, expected):
    assert parallel.mini_batch_size(value, "properties.miniBatchSize") == expected


@pytest.mark.parametrize("value", [0, -1, "ten", "10tb", "1.5", True, None, "kb", [10]])
def test_a_mini_batch_size_that_is_neither_is_refused_naming_the_field(value):
    with pytest.raises(ValidationFailed) as caught:
        parallel.mini_batch_size(value, "properties.miniBatchSize")
    assert caught.value.target == "properties.miniBatchSize"


@pytest.mark.parametrize(("value", "ok"), [(-1, True), (0, True), (7, True), (-2, False), ("3", False),
                                           (True, False)])
def test_thresholds_are_minus_one_or_a_count(value, ok):
    if ok:
        assert parallel.threshold(value, "t") == value
    else:
        with pytest.raises(ValidationFailed):
            parallel.threshold(value, "t")


@pytest.mark.parametrize(("change", "target"), [
    ({"entry_script": " "}, "properties.entry_script"),
    ({"mini_batch_size": None}, "properties.mini_batch_size"),
    ({"max_concurrency_per_instance": 0}, "properties.max_concurrency_per_instance"),
    ({"timeout_seconds": 0}, "properties.retry_settings"),
    ({"output_file_name": "a/b.csv"}, "properties.output_file_name"),
    ({"output_action": "append"}, "properties.output_action")])
def test_settings_no_job_could_run_are_refused_naming_them(change, target):
    with pytest.raises(ValidationFailed) as caught:
        parallel.check(replace(SETTINGS, **change), "properties")
    assert caught.value.target == target


def body(settings=SETTINGS, **more) -> dict:
    return parallel.command_body(
        settings, code_id=f"{ARM}/codes/c/versions/1", environment_id=f"{ARM}/environments/e/versions/1",
        compute_id=f"{ARM}/computes/cpu", input_name="data",
        input_entry={"jobInputType": "uri_folder", "uri": "azureml://datastores/workspaceblobstore/paths/in/"},
        output_uri="azureml://datastores/workspaceblobstore/paths/out/", environment_variables={"A": "1"},
        display_name="score", experiment_name="batch", **{"model_id": None, **more})


def test_the_command_job_runs_the_runner_on_every_instance():
    props, spec = command_job.parse(body())
    assert spec.instance_count == 2 and spec.compute_id.endswith("/computes/cpu")
    assert spec.inputs["data"]["mode"] == "ReadOnlyMount"
    assert spec.outputs["score"] == {"jobOutputType": "uri_folder", "mode": "ReadWriteMount",
                                     "uri": "azureml://datastores/workspaceblobstore/paths/out/"}
    assert spec.command.startswith(f"python {parallel.RUNNER} --input ${{{{inputs.data}}}} --input-type uri_folder")
    for part in ("--concurrency 3", "--max-retries 3", "--timeout 30", "--mini-batch-size 10",
                 "--entry-script score.py", "--output ${{outputs.score}}", "--output-file-name predictions.csv"):
        assert part in spec.command
    assert props["environmentVariables"] == {"A": "1"} and props["properties"]["azureml.parallelRun"] == "true"


def test_a_model_is_a_read_only_input_and_the_runner_points_azureml_model_dir_at_it():
    _, spec = command_job.parse(body(model_id=f"{ARM}/models/m/versions/2", model_type="mlflow_model",
                                     model_uri="azureml://datastores/workspaceblobstore/paths/models/m/",
                                     settings=replace(SETTINGS, entry_script=None)))
    assert spec.inputs["model"] == {"jobInputType": "mlflow_model", "mode": "ReadOnlyMount",
                                    "uri": "azureml://datastores/workspaceblobstore/paths/models/m/"}
    assert "--model ${{inputs.model}}" in spec.command and "--mlflow-model" in spec.command


def test_sizes_summary_only_and_the_script_s_own_arguments():
    settings = replace(SETTINGS, mini_batch_size=None, mini_batch_bytes=10240, output_action=parallel.SUMMARY_ONLY,
                       program_arguments="--threshold 0.5 --label 'two words'")
    command = command_job.parse(body(settings))[1].command
    assert "--mini-batch-bytes 10240" in command and "--output" not in command
    assert command.endswith("-- --threshold 0.5 --label 'two words'")


def test_an_mltable_read_direct_is_mounted_for_the_runner():
    entry = {"jobInputType": "mltable", "uri": "azureml://datastores/workspaceblobstore/paths/t/", "mode": "Direct"}
    props = parallel.command_body(SETTINGS, code_id=None, environment_id="e", compute_id="c", input_name="table",
                                  input_entry=entry, output_uri=None, model_id=None, environment_variables={},
                                  display_name="d", experiment_name="x")["properties"]
    assert props["inputs"]["table"]["mode"] == "ReadOnlyMount" and "codeId" not in props
    assert "--input-type mltable" in props["command"] and "uri" not in props["outputs"]["score"]
