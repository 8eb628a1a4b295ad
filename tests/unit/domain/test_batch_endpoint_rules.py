"""Batch endpoints and deployments: bodies checked and filled with Azure's defaults, which deployment an invocation
runs, and the parallel settings a job of a deployment runs with. Pure."""

import pytest

from emulator.domain.jobs import parallel
from emulator.domain.jobs.parallel import APPEND_ROW, SUMMARY_ONLY
from emulator.domain.serving import batch_deployments, batch_endpoints
from emulator.errors import ValidationFailed

WS = "/subscriptions/s/resourceGroups/rg/providers/Microsoft.MachineLearningServices/workspaces/ws"
MODEL = f"{WS}/models/m/versions/1"
CODE = f"{WS}/codes/c/versions/1"
ENV = f"{WS}/environments/e/versions/1"


def endpoint(**props) -> dict:
    return {"location": "local", "tags": {}, "properties": {"authMode": "aadToken", "properties": {}, **props}}


def test_an_endpoint_takes_entra_tokens_and_the_workspace_location():
    stored = batch_endpoints.validated({"properties": {}}, "scorer", "westeurope", [])
    assert stored["location"] == "westeurope" and stored["properties"]["authMode"] == "AADToken"
    assert stored["properties"]["defaults"] == {"deploymentName": None}
    assert batch_endpoints.validated(endpoint(), "scorer", "x", [])["location"] == "local"


@pytest.mark.parametrize(("name", "body", "deployments", "target"), [
    ("scorer", endpoint(authMode="Key"), [], "properties.authMode"),
    ("scorer", endpoint(authMode="nonsense"), [], "properties.authMode"),
    ("scorer", endpoint(defaults={"deploymentName": "blue"}), [], "properties.defaults.deploymentName"),
    ("scorer", endpoint(defaults={"deploymentName": "blue"}), ["green"], "properties.defaults.deploymentName"),
    ("-bad-", endpoint(), [], "endpointName"),
    ("scorer", {"properties": "x"}, [], "properties"),
])
def test_bad_endpoints_name_the_field(name, body, deployments, target):
    with pytest.raises(ValidationFailed) as caught:
        batch_endpoints.validated(body, name, "local", deployments)
    assert caught.value.target == target


def test_the_default_deployment_is_spelled_as_the_deployment_is():
    stored = batch_endpoints.validated(endpoint(defaults={"deploymentName": "BLUE"}), "scorer", "x", ["Blue"])
    assert batch_endpoints.default_deployment(stored) == "Blue"


def test_an_invocation_runs_the_named_deployment_else_the_default():
    stored = batch_endpoints.validated(endpoint(defaults={"deploymentName": "blue"}), "ep1", "x", ["blue", "green"])
    assert batch_endpoints.chosen(None, stored, ["blue", "green"], "e") == "blue"
    assert batch_endpoints.chosen("GREEN", stored, ["blue", "green"], "e") == "green"
    with pytest.raises(ValidationFailed) as caught:
        batch_endpoints.chosen("red", stored, ["blue", "green"], "e")
    assert caught.value.target == "azureml-model-deployment"


def test_with_no_deployment_and_no_default_the_error_names_the_default():
    stored = batch_endpoints.validated(endpoint(), "ep1", "x", [])
    with pytest.raises(ValidationFailed) as caught:
        batch_endpoints.chosen(None, stored, ["blue"], "e")
    assert caught.value.target == "properties.defaults.deploymentName"
    assert "deployment_name" in caught.value.message


def model_deployment(**props) -> dict:
    base = {"model": {"referenceType": "Id", "assetId": MODEL},
            "codeConfiguration": {"codeId": CODE, "scoringScript": "score.py"}, "environmentId": ENV,
            "compute": f"{WS}/computes/cpu"}
    return {"location": "local", "tags": {}, "properties": {**base, **props}}


def test_a_model_deployment_gets_azures_defaults():
    stored = batch_deployments.validated(model_deployment())
    props = stored["properties"]
    assert stored["kind"] == batch_deployments.MODEL and stored["refs"]["compute"] == "cpu"
    assert (props["miniBatchSize"], props["maxConcurrencyPerInstance"], props["errorThreshold"]) == (10, 1, -1)
    assert (props["outputAction"], props["outputFileName"], props["loggingLevel"]) == \
        ("AppendRow", "predictions.csv", "Info")
    assert props["retrySettings"] == {"maxRetries": 3, "timeout": "PT30S"}
    assert props["resources"] == {"instanceCount": 1, "properties": {}}
    assert stored["refs"]["model"] == {"kind": "models", "name": "m", "version": "1", "registry": None}


def test_an_mlflow_deployment_needs_no_code_nor_environment():
    stored = batch_deployments.validated(model_deployment(codeConfiguration=None, environmentId=None, compute="cpu"))
    assert stored["properties"]["codeConfiguration"] is None and stored["refs"]["code"] is None
    assert batch_deployments.settings_of(stored, {}).entry_script is None


@pytest.mark.parametrize(("props", "target"), [
    ({"compute": None}, "properties.compute"),
    ({"model": None}, "properties.model"),
    ({"model": {"referenceType": "DataPath", "assetId": MODEL}}, "properties.model.referenceType"),
    ({"model": {"referenceType": "Id", "assetId": ENV}}, "properties.model.assetId"),
    ({"environmentId": None}, "properties.environmentId"),
    ({"codeConfiguration": {"codeId": CODE}}, "properties.codeConfiguration.scoringScript"),
    ({"codeConfiguration": {"codeId": CODE, "scoringScript": "../x.py"}}, "properties.codeConfiguration.scoringScript"),
    ({"miniBatchSize": 0}, "properties.miniBatchSize"),
    ({"miniBatchSize": "ten"}, "properties.miniBatchSize"),
    ({"miniBatchSize": "10 parsecs"}, "properties.miniBatchSize"),
    ({"miniBatchSize": True}, "properties.miniBatchSize"),
    ({"maxConcurrencyPerInstance": 0}, "properties.maxConcurrencyPerInstance"),
    ({"errorThreshold": -2}, "properties.errorThreshold"),
    ({"outputAction": "Append"}, "properties.outputAction"),
    ({"outputFileName": "out/pred.csv"}, "properties.outputFileName"),
    ({"loggingLevel": "loud"}, "properties.loggingLevel"),
    ({"retrySettings": {"maxRetries": -1}}, "properties.retrySettings.maxRetries"),
    ({"retrySettings": {"timeout": "soon"}}, "properties.retrySettings.timeout"),
    ({"retrySettings": {"timeout": "PT0S"}}, "properties.retrySettings.timeout"),
    ({"resources": {"instanceCount": 0}}, "properties.resources.instanceCount"),
])
def test_bad_model_deployments_name_the_field(props, target):
    with pytest.raises(ValidationFailed) as caught:
        batch_deployments.validated(model_deployment(**props))
    assert caught.value.target == target


@pytest.mark.parametrize(("value", "expected"), [
    (5, (5, None)), ("5", (5, None)), ("10kb", (None, 10240)), ("1MB", (None, 1 << 20)), (" 2 gb ", (None, 2 << 30)),
])
def test_a_mini_batch_is_a_count_or_a_size(value, expected):
    assert parallel.mini_batch_size(value, "t") == expected


def test_a_pipeline_component_deployment_is_stored_as_the_sdk_sends_it():
    config = {"deploymentConfigurationType": "PipelineComponent",
              "componentId": {"referenceType": "Id", "assetId": f"{WS}/components/c/versions/1"},
              "settings": {"default_compute": "cpu", "continue_on_step_failure": False}}
    stored = batch_deployments.validated({"location": "local", "properties": {"deploymentConfiguration": config,
                                                                               "miniBatchSize": 10}})
    assert stored["kind"] == batch_deployments.PIPELINE and stored["refs"]["compute"] == "cpu"
    assert stored["properties"]["deploymentConfiguration"]["settings"] == config["settings"]
    with pytest.raises(ValidationFailed) as caught:
        batch_deployments.validated({"properties": {"deploymentConfiguration": {**config,
                                                                                "deploymentConfigurationType": "X"}}})
    assert caught.value.target == "properties.deploymentConfiguration.deploymentConfigurationType"


def test_a_jobs_settings_are_the_deployments_with_the_invocations_overrides():
    stored = batch_deployments.validated(model_deployment(
        miniBatchSize=4, maxConcurrencyPerInstance=2, errorThreshold=5, outputAction="summaryonly",
        retrySettings={"maxRetries": 1, "timeout": "PT1M"}, resources={"instanceCount": 2}, loggingLevel="debug"))
    settings = batch_deployments.settings_of(stored, {})
    assert (settings.entry_script, settings.mini_batch_size, settings.mini_batch_bytes) == ("score.py", 4, None)
    assert (settings.instance_count, settings.max_concurrency_per_instance) == (2, 2)
    assert (settings.max_retries, settings.timeout_seconds, settings.error_threshold) == (1, 60.0, 5)
    assert (settings.output_action, settings.logging_level, settings.mini_batch_error_threshold) == \
        (SUMMARY_ONLY, "DEBUG", -1)
    overrides = batch_deployments.parallel_fields({"miniBatchSize": "1kb", "outputFileName": "o.csv"})
    again = batch_deployments.settings_of(stored, {k: overrides[k] for k in ("miniBatchSize", "outputFileName")})
    assert (again.mini_batch_size, again.mini_batch_bytes, again.output_file_name) == (None, 1024, "o.csv")
    assert batch_deployments.settings_of(batch_deployments.validated(model_deployment()), {}).output_action == \
        APPEND_ROW
