"""A pipeline component deployment's invocation: the pipeline job it makes (the component's steps, the invocation's
inputs and outputs by the component's port names, defaults for primitives left out). Pure."""

import pytest

from emulator.domain.serving import batch_jobs, batch_pipelines
from emulator.errors import ValidationFailed

FOLDER = "azureml://datastores/workspaceblobstore/paths/in/"
COMPUTE = "/subscriptions/s/resourceGroups/r/providers/Microsoft.MachineLearningServices/workspaces/w/computes/cpu"
STEPS = {"prep": {"type": "command", "componentId": "azureml:prep:1",
                  "inputs": {"data": {"job_input_type": "literal", "value": "${{parent.inputs.input_data}}"}}}}
COMPONENT = {"name": "prep_and_score", "version": "3", "type": "pipeline", "jobs": STEPS,
             "inputs": {"input_data": {"type": "uri_folder"}, "score_mode": {"type": "string", "default": "append"},
                        "limit": {"type": "integer", "optional": True}},
             "outputs": {"scores": {"type": "uri_folder", "mode": "upload"}}}


def invocation(inputs: dict | None = None, outputs: dict | None = None) -> batch_jobs.Invocation:
    given = {"input_data": {"jobInputType": "UriFolder", "uri": FOLDER}} if inputs is None else inputs
    return batch_jobs.parsed({"properties": {"inputData": given, "outputData": outputs or {}}})


def body(inv: batch_jobs.Invocation, settings: dict | None = None) -> dict:
    return batch_pipelines.job_body("batchjob-1", "ep", "pipe", COMPONENT, COMPUTE, settings or {}, inv)["properties"]


def test_the_job_runs_the_components_steps_on_the_default_compute():
    props = body(invocation(), {"continue_on_step_failure": True, "default_compute": "ignored: the resolved id wins"})
    assert props["jobType"] == "Pipeline" and props["jobs"] == STEPS and props["experimentName"] == "ep"
    assert props["settings"] == {"continue_on_step_failure": True, "default_compute": COMPUTE,
                                 "_source": "BatchDeployment"}
    assert props["tags"]["azureml.batchrun"] == "true" and props["tags"]["azureml.jobtype"] == "azureml.pipelinejob"
    assert props["properties"]["azureml.deploymentname"] == "pipe"


def test_inputs_by_name_a_primitive_left_out_takes_its_default_an_optional_one_stays_out():
    props = body(invocation())
    assert props["inputs"] == {"input_data": {"jobInputType": "uri_folder", "uri": FOLDER, "mode": "ReadOnlyMount"},
                               "score_mode": {"jobInputType": "literal", "value": "append"}}
    given = invocation({"input_data": {"jobInputType": "UriFolder", "uri": FOLDER},
                        "score_mode": {"jobInputType": "Literal", "value": "fast"}})
    assert body(given)["inputs"]["score_mode"] == {"jobInputType": "literal", "value": "fast"}


def test_outputs_are_the_components_with_the_invocations_paths():
    assert body(invocation())["outputs"] == {"scores": {"jobOutputType": "uri_folder", "mode": "Upload"}}
    asked = invocation(outputs={"scores": {"jobOutputType": "UriFolder", "uri": "azureml://datastores/x/paths/o/"}})
    assert body(asked)["outputs"]["scores"]["uri"] == "azureml://datastores/x/paths/o/"


@pytest.mark.parametrize(("inv", "target"), [
    (lambda: invocation({"score_mode": {"jobInputType": "Literal", "value": "x"}}), "properties.inputData.input_data"),
    (lambda: invocation({"input_data": {"jobInputType": "UriFolder", "uri": FOLDER},
                         "other": {"jobInputType": "UriFolder", "uri": FOLDER}}), "properties.inputData.other"),
    (lambda: invocation(outputs={"score": {"jobOutputType": "UriFile", "uri": "azureml://datastores/x/paths/a"}}),
     "properties.outputData.score"),
])
def test_ports_the_component_does_not_have_or_needs_name_the_field(inv, target):
    with pytest.raises(ValidationFailed) as caught:
        body(inv())
    assert caught.value.target == target
