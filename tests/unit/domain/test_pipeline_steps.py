"""A pipeline body as the SDK sends it, read (domain/jobs/pipeline.py), and each step made the command job that runs
it (domain/jobs/pipeline_steps.py): values from literals, defaults, the pipeline's inputs and earlier steps' outputs;
outputs where the step, the pipeline's output or the default datastore says; settings in a command job's spelling;
the reuse key equal for the same work whatever the run's names, different for different work."""

import pytest

from emulator.domain.assets.components import ComponentSpec
from emulator.domain.jobs import pipeline, pipeline_steps
from emulator.errors import ValidationFailed

WS = "/subscriptions/s/resourceGroups/rg/providers/Microsoft.MachineLearningServices/workspaces/ws"


def component(**more) -> ComponentSpec:
    base = dict(name="c", version="1", command="python run.py $[[--d ${{inputs.d}}]] --n ${{inputs.n}}",
                code_id=f"{WS}/codes/x/versions/1", environment_id=f"{WS}/environments/e/versions/1",
                inputs={"d": {"type": "uri_folder", "optional": True}, "n": {"type": "integer", "default": "1"},
                        "flag": {"type": "boolean", "optional": True}},
                outputs={"out": {"type": "uri_folder", "mode": "upload"}, "score": {"type": "number"}},
                resources={"instance_count": 1}, distribution=None, environment_variables={"A": "component"},
                is_deterministic=True)
    return ComponentSpec(**{**base, **more})


def spec_of(steps: dict, **props) -> tuple[dict, pipeline.PipelineSpec]:
    body = {"jobType": "Pipeline", "jobs": steps, "inputs": {"n": {"jobInputType": "literal", "value": "4"},
                                                             "raw": {"jobInputType": "uri_folder",
                                                                     "uri": "azureml://datastores/d/paths/raw/"}},
            "outputs": {"final": {"jobOutputType": "uri_folder"}}, **props}
    return pipeline.parse({"properties": body})


def literal(value) -> dict:
    return {"job_input_type": "literal", "value": value}


CHILDREN = {"a": "child-a", "b": "child-b"}


def test_a_step_reads_literals_the_pipelines_inputs_and_earlier_outputs():
    props, spec = spec_of({
        "a": {"type": "command", "componentId": "azureml:c:1",
              "inputs": {"d": literal("${{parent.inputs.raw}}"), "n": literal("${{parent.inputs.n}}"),
                         "flag": literal(True)}},
        "b": {"type": "command", "componentId": "azureml:c:1",
              "inputs": {"d": {**literal("${{parent.jobs.a.outputs.out}}"), "mode": "Download"},
                         "n": literal("x${{parent.inputs.n}}y")}}})
    a = pipeline_steps.child_body(spec, props, "a", component(), CHILDREN, "p")["properties"]
    assert a["inputs"] == {"d": {"jobInputType": "uri_folder", "uri": "azureml://datastores/d/paths/raw/"},
                           "n": {"jobInputType": "literal", "value": "4"},
                           "flag": {"jobInputType": "literal", "value": "true"}}
    b = pipeline_steps.child_body(spec, props, "b", component(), CHILDREN, "p")["properties"]
    assert b["inputs"]["d"] == {"jobInputType": "uri_folder", "uri": "azureml://jobs/child-a/outputs/out",
                                "mode": "Download"}
    assert b["inputs"]["n"]["value"] == "x4y" and "flag" not in b["inputs"]  # optional, unbound: left out


def test_outputs_go_where_the_step_the_pipeline_or_the_default_datastore_says():
    props, spec = spec_of({
        "a": {"type": "command", "componentId": "azureml:c:1",
              "outputs": {"out": {"job_output_type": "uri_folder", "uri": "azureml://datastores/d/paths/${{name}}/o/"}}},
        "b": {"type": "command", "componentId": "azureml:c:1",
              "outputs": {"out": {"type": "literal", "value": "${{parent.outputs.final}}"}}}},
        settings={"default_datastore": f"{WS}/datastores/other"})
    a = pipeline_steps.child_body(spec, props, "a", component(), CHILDREN, "p")["properties"]
    assert a["outputs"] == {"out": {"jobOutputType": "uri_folder", "mode": "Upload",
                                    "uri": "azureml://datastores/d/paths/child-a/o/"}}  # `score` is a value: none
    b = pipeline_steps.child_body(spec, props, "b", component(), CHILDREN, "p")["properties"]
    assert b["outputs"]["out"]["uri"] == "azureml://datastores/workspaceblobstore/paths/azureml/p/final/"
    _, plain = spec_of({"a": {"type": "command", "componentId": "azureml:c:1"}},
                       settings={"default_datastore": f"{WS}/datastores/other"})
    c = pipeline_steps.child_body(plain, props, "a", component(), CHILDREN, "p")["properties"]
    assert c["outputs"]["out"]["uri"] == "azureml://datastores/other/paths/azureml/child-a/out/"


def test_settings_are_said_as_a_command_job_says_them():
    props, spec = spec_of({"a": {"type": "command", "componentId": "azureml:c:1",
                                 "computeId": f"{WS}/computes/serverless",
                                 "resources": {"instance_count": 2, "instance_type": "Standard_D2_v3"},
                                 "environment_variables": {"A": "step", "B": "2"},
                                 "queue_settings": {"job_tier": "Spot"}, "limits": {"timeout": 60}}},
                          settings={"default_compute": f"{WS}/computes/cpu"})
    body = pipeline_steps.child_body(spec, props, "a", component(distribution={"type": "pytorch"}), CHILDREN,
                                     "p")["properties"]
    assert "computeId" not in body  # serverless
    assert body["resources"] == {"instanceCount": 2, "instanceType": "Standard_D2_v3"}
    assert body["environmentVariables"] == {"A": "step", "B": "2"} and body["queueSettings"] == {"jobTier": "Spot"}
    assert body["distribution"] == {"distributionType": "PyTorch"} and body["limits"] == {"timeout": 60}
    assert body["displayName"] == "a" and body["properties"]["azureml.nodeid"] == "a"
    _, defaulted = spec_of({"a": {"type": "command", "componentId": "azureml:c:1"}},
                           settings={"default_compute": f"{WS}/computes/cpu"})
    assert pipeline_steps.child_body(defaulted, props, "a", component(), CHILDREN, "p")["properties"][
        "computeId"] == f"{WS}/computes/cpu"


def test_a_required_input_left_unbound_is_refused_naming_it():
    props, spec = spec_of({"a": {"type": "command", "componentId": "azureml:c:1"}})
    needy = component(inputs={"n": {"type": "integer"}}, command="run ${{inputs.n}}")
    with pytest.raises(ValidationFailed) as refused:
        pipeline_steps.child_body(spec, props, "a", needy, CHILDREN, "p")
    assert refused.value.target == "properties.jobs.a.inputs.n"


def test_the_reuse_key_is_the_work_not_the_names():
    props, spec = spec_of({"a": {"type": "command", "componentId": "azureml:c:1"},
                           "b": {"type": "command", "componentId": "azureml:c:1",
                                 "inputs": {"d": literal("${{parent.jobs.a.outputs.out}}")},
                                 "outputs": {"out": {"type": "literal", "value": "${{parent.outputs.final}}"}}}})
    first = pipeline_steps.child_body(spec, props, "b", component(), CHILDREN, "p1")
    again = pipeline_steps.child_body(spec, props, "b", component(), {"a": "a2", "b": "b2"}, "p2")
    where = "azureml://datastores/workspaceblobstore/paths/azureml/child-a/out/"
    key = pipeline_steps.reuse_key(first, {"azureml://jobs/child-a/outputs/out": where}, "child-b", "p1")
    assert key == pipeline_steps.reuse_key(again, {"azureml://jobs/a2/outputs/out": where}, "b2", "p2")
    elsewhere = where.replace("child-a", "a2")  # a ran again and wrote elsewhere
    assert key != pipeline_steps.reuse_key(again, {"azureml://jobs/a2/outputs/out": elsewhere}, "b2", "p2")
    other = pipeline_steps.child_body(spec, props, "b", component(environment_variables={"A": "x"}), CHILDREN, "p1")
    assert key != pipeline_steps.reuse_key(other, {"azureml://jobs/child-a/outputs/out": where}, "child-b", "p1")


@pytest.mark.parametrize(("props", "target"), [
    ({"jobType": "Command"}, "properties.jobType"),
    ({"jobs": {"a": {"type": "command"}}}, "properties.jobs.a.componentId"),
    ({"jobs": {"a": {"type": "command", "componentId": "name: x\nversion: 1\n"}}}, "properties.jobs.a.componentId"),
    ({"jobs": {"a": {"type": "sweep", "componentId": "azureml:c:1"}}}, "properties.jobs.a.type"),
    ({"settings": {"force_rerun": 1}}, "properties.settings.force_rerun"),
    ({"inputs": {"x": {"jobInputType": "pdf"}}}, "properties.inputs.x.jobInputType"),
])
def test_bad_bodies_are_refused_naming_the_field(props, target):
    body = {"jobType": "Pipeline", "jobs": {"a": {"type": "command", "componentId": "azureml:c:1"}}, **props}
    with pytest.raises(ValidationFailed) as refused:
        pipeline.parse({"properties": body})
    assert refused.value.target == target


def test_serverless_is_the_word_or_the_arm_id_the_sdk_makes_of_it():
    assert pipeline.is_serverless("serverless") and pipeline.is_serverless(f"{WS}/computes/serverless")
    assert not pipeline.is_serverless(f"{WS}/computes/cpu") and not pipeline.is_serverless(None)
