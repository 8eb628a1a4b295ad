"""Command components: a version's spec (types, defaults, ranges, enums, modes, placeholders, name and version),
what may change of an existing version, and the references that name one."""

import pytest

from emulator.domain.assets import component_io, components
from emulator.errors import ValidationFailed

SPEC = components.SPEC
WS = "/subscriptions/s/resourceGroups/rg/providers/Microsoft.MachineLearningServices/workspaces/ws"
ENV = f"azureml:{WS}/environments/env/versions/1"


def spec(**fields) -> dict:
    """The spec the SDK sends for docs' train.yml, with defaults and bounds as strings."""
    return {"name": "my_train", "type": "command", "environment": ENV, "is_deterministic": True,
            "code": f"azureml:{WS}/codes/c/versions/1",
            "command": "python train.py --data ${{inputs.data}} --epochs ${{inputs.epochs}} "
                       "--rate ${{inputs.rate}} $[[--flag ${{inputs.flag}}]] --out ${{outputs.model}}",
            "inputs": {"data": {"type": "uri_folder"}, "epochs": {"type": "integer", "min": "0", "max": "100"},
                       "rate": {"type": "number", "default": "0.01"},
                       "schedule": {"type": "string", "default": "time-based", "enum": ["step", "time-based"]},
                       "flag": {"type": "boolean", "optional": True}},
            "outputs": {"model": {"type": "uri_folder"}}, "_source": "YAML.COMPONENT", **fields}


def body(anonymous: bool = False, **fields) -> dict:
    return {"properties": {"componentSpec": spec(**fields), "isAnonymous": anonymous, "isArchived": False,
                           "properties": {"client_component_hash": "h"}, "tags": {}}}


def test_a_docs_spec_is_kept_as_sent_with_the_paths_name_and_version():
    stored = components.version_body(body(), "my_train", "1")
    assert stored["componentSpec"] == {**spec(), "version": "1"}
    assert stored["isAnonymous"] is False and stored["properties"] == {"client_component_hash": "h"}
    assert components.version_body(body(version="7"), "my_train", "7")["componentSpec"]["version"] == "7"


def test_an_anonymous_version_is_its_hash_whatever_the_spec_says():
    stored = components.version_body(body(anonymous=True, name="azureml_anonymous", version="1"),
                                     "azureml_anonymous", "4f2c-hash")
    assert stored["componentSpec"]["version"] == "4f2c-hash" and stored["isAnonymous"] is True
    named = components.version_body(body(anonymous=True, name="train_step"), "azureml_anonymous", "4f2c-hash")
    assert named["componentSpec"]["name"] == "train_step"  # a registered component's, used inline


@pytest.mark.parametrize("kind", ["string", "String", "integer", "Integer", "number", "boolean", "uri_file",
                                  "uri_folder", "mltable", "custom_model", "mlflow_model", "triton_model"])
def test_every_input_type_of_the_sdk_and_the_rest_api(kind):
    assert component_io.inputs({"x": {"type": kind}}, "t") == {"x": {"type": kind}}


@pytest.mark.parametrize(("fields", "target"), [
    ({"type": "path"}, "inputs.x.type"),
    ({"type": ["string", "integer"]}, "inputs.x.type"),
    ({"type": "integer", "default": "1.5"}, "inputs.x.default"),
    ({"type": "integer", "default": True}, "inputs.x.default"),
    ({"type": "number", "default": "fast"}, "inputs.x.default"),
    ({"type": "number", "default": "nan"}, "inputs.x.default"),
    ({"type": "boolean", "default": "yes"}, "inputs.x.default"),
    ({"type": "integer", "min": "5", "max": "1"}, "inputs.x.min"),
    ({"type": "integer", "min": "0", "max": "10", "default": "11"}, "inputs.x.default"),
    ({"type": "number", "min": "0.5", "default": "0.1"}, "inputs.x.default"),
    ({"type": "string", "min": "1"}, "inputs.x.min"),
    ({"type": "string", "enum": []}, "inputs.x.enum"),
    ({"type": "integer", "enum": ["1"]}, "inputs.x.enum"),
    ({"type": "string", "enum": ["a", "b"], "default": "c"}, "inputs.x.default"),
    ({"type": "string", "optional": "maybe"}, "inputs.x.optional"),
    ({"type": "uri_folder", "mode": "rw_mount"}, "inputs.x.mode"),
    ({"type": "string", "mode": "download"}, "inputs.x.mode"),
    ({"type": "uri_file", "default": 3}, "inputs.x.default"),
])
def test_bad_inputs_name_the_field(fields, target):
    with pytest.raises(ValidationFailed) as err:
        component_io.inputs({"x": fields}, "inputs")
    assert err.value.target == target


@pytest.mark.parametrize(("fields", "ok"), [
    ({"type": "integer", "min": 0, "max": 10, "default": 10}, True),  # a REST client's numbers, bounds inclusive
    ({"type": "number", "min": "-1.5", "default": "-1"}, True),
    ({"type": "boolean", "default": "False"}, True),
    ({"type": "uri_folder", "mode": "download", "default": "azureml://datastores/d/paths/p"}, True),
    ({"type": "string", "default": "1e5"}, True),
])
def test_good_inputs_pass(fields, ok):
    assert component_io.inputs({"x": fields}, "t")["x"] == fields


@pytest.mark.parametrize(("outputs", "target"), [
    ({"m": {"type": "literal"}}, "outputs.m.type"),
    ({"m": {"type": "uri_folder", "mode": "ro_mount"}}, "outputs.m.mode"),
    ({"m": "uri_folder"}, "outputs.m"),
    ({"1m": {"type": "uri_folder"}}, "outputs.1m"),
    ({"Model": {"type": "uri_folder"}, "model": {"type": "uri_file"}}, "outputs.model"),
])
def test_bad_outputs_name_the_field(outputs, target):
    with pytest.raises(ValidationFailed) as err:
        component_io.outputs(outputs, "outputs")
    assert err.value.target == target


def test_outputs_of_data_models_and_values():
    declared = {"m": {"type": "mlflow_model", "mode": "upload"}, "n": {"type": "integer"}}
    assert component_io.outputs(declared, "t") == declared


@pytest.mark.parametrize(("fields", "target"), [
    ({"type": "spark"}, "type"),
    ({"type": "pipeline", "jobs": {}}, "jobs"),
    ({"type": "pipeline", "jobs": {"a": {"type": "sweep", "componentId": "azureml:c:1"}}}, "jobs.a.type"),
    ({"type": None}, "type"),
    ({"command": ""}, "command"),
    ({"command": "echo ${{inputs.missing}}"}, "command"),
    ({"command": "echo $[[--x ${{inputs.missing}}]]"}, "command"),  # an optional part names declared inputs too
    ({"command": "echo ${{outputs.nope}}"}, "command"),
    ({"environment": None}, "environment"),
    ({"environment": {"image": "python:3.11-slim"}}, "environment"),
    ({"code": 3}, "code"),
    ({"name": "other"}, "name"),
    ({"version": "2"}, "version"),
    ({"resources": {"instance_count": 0}}, "resources.instance_count"),
    ({"resources": {"instance_count": True}}, "resources.instance_count"),
    ({"resources": {"instance_type": 4}}, "resources.instance_type"),
    ({"distribution": {"type": "horovod"}}, "distribution.type"),
    ({"distribution": {"type": "pytorch", "process_count_per_instance": 0}}, "distribution.process_count_per_instance"),
    ({"distribution": {"type": "tensorflow", "worker_count": -1}}, "distribution.worker_count"),
    ({"environment_variables": {"A": 1}}, "environment_variables.A"),
    ({"is_deterministic": "yes"}, "is_deterministic"),
    ({"inputs": {"x": {"type": "nope"}}}, "inputs.x.type"),
])
def test_bad_specs_name_the_field(fields, target):
    with pytest.raises(ValidationFailed) as err:
        components.version_body(body(**fields), "my_train", "1")
    assert err.value.target == f"{SPEC}.{target}"


def test_a_spec_that_names_an_undeclared_input_says_which():
    with pytest.raises(ValidationFailed) as err:
        components.version_body(body(command="echo ${{inputs.epochs}} ${{inputs.epohcs}}"), "my_train", "1")
    assert "${{inputs.epohcs}}" in err.value.message and "epochs}}" not in err.value.message


def test_distribution_resources_and_environment_variables_are_kept():
    fields = {"resources": {"instance_count": 2, "instance_type": "Standard_DS3_v2"},
              "distribution": {"type": "pytorch", "process_count_per_instance": 1},
              "environment_variables": {"A": "1"}}
    stored = components.version_body(body(**fields), "my_train", "1")["componentSpec"]
    assert {k: stored[k] for k in fields} == fields


@pytest.mark.parametrize(("name", "version", "target"), [
    ("My_Train", "1", "name"), ("my-train", "1", "name"), ("1train", "1", "name"), ("t" * 256, "1", "name"),
    ("my_train", "-1", "version"), ("my_train", "a/b", "version"), ("my_train", "azureml_default", "version"),
])
def test_bad_names_and_versions(name, version, target):
    with pytest.raises(ValidationFailed) as err:
        components.version_body(body(name=name), name, version)
    assert err.value.target == target


def test_missing_spec_and_bad_common_fields():
    with pytest.raises(ValidationFailed) as err:
        components.version_body({"properties": {}}, "my_train", "1")
    assert err.value.target == SPEC
    with pytest.raises(ValidationFailed) as err:
        components.version_body({"properties": {"componentSpec": spec(), "tags": {"a": [1]}}}, "my_train", "1")
    assert err.value.target == "properties.tags.a"


def test_what_may_change_of_an_existing_version():
    old = components.version_body(body(), "my_train", "1")
    described = components.version_body(body(description="d", display_name="Train", tags={"a": "b"},
                                             _source="BUILDER"), "my_train", "1")
    assert components.changed(old, described) is None
    assert components.changed(old, {**old, "description": "top-level", "isArchived": True}) is None
    commanded = components.version_body(body(command="python train.py --out ${{outputs.model}}"), "my_train", "1")
    assert components.changed(old, commanded) == "componentSpec.command"
    retyped = spec()
    retyped["inputs"] = {**retyped["inputs"], "epochs": {"type": "number"}}
    assert components.changed(old, {"componentSpec": {**old["componentSpec"], "inputs": retyped["inputs"]}}) == \
        "componentSpec.inputs"


def test_anonymous_components_are_hidden_from_lists():
    assert components.hidden([{"isAnonymous": True}, {"isAnonymous": True}])
    assert not components.hidden([{"isAnonymous": True}, {"isAnonymous": False}])


@pytest.mark.parametrize(("value", "expected"), [
    ("azureml:my_train:1", components.Reference("my_train", "1", None)),
    ("azureml:my_train@latest", components.Reference("my_train", None, "latest")),
    ("azureml:my_train@LATEST", components.Reference("my_train", None, "latest")),
    (f"{WS}/components/my_train/versions/2", components.Reference("my_train", "2", None, workspace=("s", "rg", "ws"))),
    (f"azureml:{WS}/components/my_train/labels/latest",
     components.Reference("my_train", None, "latest", workspace=("s", "rg", "ws"))),
    ("azureml://registries/team/components/my_train/versions/3",
     components.Reference("my_train", "3", None, registry="team")),
    ("azureml://registries/team/components/my_train/labels/latest",
     components.Reference("my_train", None, "latest", registry="team")),
])
def test_references_to_a_component(value, expected):
    assert components.reference(value, "components", "t") == expected


@pytest.mark.parametrize("value", ["my_train", "my_train:1", "azureml:my_train", "azureml:my_train@stable",
                                   f"{WS}/codes/c/versions/1", "azureml://registries/team/environments/e/versions/1",
                                   "https://example.com/c.yml", "", 3])
def test_bad_references_name_the_target(value):
    with pytest.raises(ValidationFailed) as err:
        components.reference(value, "components", "properties.jobs.train.componentId")
    assert err.value.target == "properties.jobs.train.componentId"


def test_the_spec_a_pipeline_step_runs():
    stored = components.version_body(body(resources={"instance_count": 2}), "my_train", "1")
    run = components.spec_of(stored)
    assert (run.name, run.version, run.is_deterministic) == ("my_train", "1", True)
    assert run.code_id == f"{WS}/codes/c/versions/1" and run.environment_id == f"{WS}/environments/env/versions/1"
    assert run.resources == {"instance_count": 2} and run.distribution is None and run.environment_variables == {}
    assert set(run.inputs) == {"data", "epochs", "rate", "schedule", "flag"} and set(run.outputs) == {"model"}
    curated = components.spec_of(components.version_body(body(environment="azureml:AzureML-sklearn-1.5@latest"),
                                                          "my_train", "1"))
    assert curated.environment_id == "azureml:AzureML-sklearn-1.5@latest"  # as a command job takes it
