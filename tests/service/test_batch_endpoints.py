"""Batch endpoints and deployments (ARM), in-process through TestClient: the shapes the SDK parses (with the bodies
azure-ai-ml 1.35.2 sends, captured from a live api), Azure's defaults, updates and deletes, and a bad-input matrix
where each refusal names the field and creates nothing."""

import pytest

from tests.service.test_api import API, OP_URL, WS_PATH, assert_arm_error, cluster, put_cluster
from tests.service.test_instances import put_ci
from tests.service.test_online_endpoints import setup_assets

ENDPOINTS = f"{WS_PATH}/batchEndpoints"
MODEL = f"{WS_PATH}/models/m/versions/1"
CODE = f"{WS_PATH}/codes/c/versions/1"
ENV = f"{WS_PATH}/environments/env/versions/1"


def endpoint_body(**props) -> dict:
    """What BatchEndpoint(name=..., description=...)._to_rest_batch_endpoint sends."""
    return {"location": "local", "tags": {}, "properties": {"authMode": "aadToken", "properties": {}, **props}}


def deployment_body(**props) -> dict:
    """What ModelBatchDeployment(... settings=ModelBatchDeploymentSettings(...)) sends (captured)."""
    base = {"environmentId": ENV, "model": {"assetId": MODEL, "referenceType": "Id"},
            "codeConfiguration": {"codeId": CODE, "scoringScript": "score.py"}, "outputAction": "AppendRow",
            "retrySettings": {"maxRetries": 1, "timeout": "PT45S"}, "loggingLevel": "info", "miniBatchSize": 2,
            "maxConcurrencyPerInstance": 2, "environmentVariables": {"A": "1"}, "compute": f"{WS_PATH}/computes/cpu",
            "properties": {}}
    return {"location": "local", "properties": {**base, **props}, "tags": {}}


def put(client, auth, url: str, body: dict, expected: int = 201) -> dict:
    response = client.put(url, params=API, headers=auth, json=body)
    assert response.status_code == expected, response.text
    assert OP_URL.match(response.headers["Azure-AsyncOperation"]) and response.headers["Retry-After"] == "1"
    assert client.get(response.headers["Azure-AsyncOperation"], headers=auth).json()["status"] == "Succeeded"
    return response.json()


@pytest.fixture
def batch_ready(app, client, auth):
    """A cluster `cpu` (at most 2 nodes), code with score.py, an environment, a model and an endpoint `scorer`."""
    setup_assets(app, client, auth)
    put_cluster(client, auth, "cpu", cluster(max_nodes=2))
    put(client, auth, f"{ENDPOINTS}/scorer", endpoint_body(description="scores"))


def test_an_endpoint_reads_back_as_the_sdk_expects(batch_ready, client, auth):
    body = client.get(f"{ENDPOINTS}/scorer", params=API, headers=auth).json()
    props = body["properties"]
    assert body["id"] == f"{ENDPOINTS}/scorer" and body["type"].endswith("/workspaces/batchEndpoints")
    assert props["authMode"] == "AADToken" and props["provisioningState"] == "Succeeded"
    assert props["scoringUri"] == f"https://localhost:8443{ENDPOINTS}/scorer/jobs"
    assert props["swaggerUri"].startswith("https://localhost:8443/") and props["description"] == "scores"
    assert props["defaults"] == {"deploymentName": None}
    assert client.get(f"{ENDPOINTS}/SCORER", params=API, headers=auth).json() == body  # names case-insensitive
    assert [e["name"] for e in client.get(ENDPOINTS, params=API, headers=auth).json()["value"]] == ["scorer"]


def test_a_deployment_gets_azures_defaults_and_becomes_the_default(batch_ready, client, auth):
    created = put(client, auth, f"{ENDPOINTS}/scorer/deployments/blue", deployment_body())
    props = created["properties"]
    assert props["provisioningState"] == "Succeeded" and props["compute"] == f"{WS_PATH}/computes/cpu"
    assert (props["errorThreshold"], props["outputFileName"], props["loggingLevel"]) == (-1, "predictions.csv", "Info")
    assert props["resources"] == {"instanceCount": 1, "properties": {}} and "refs" not in created
    assert client.get(f"{ENDPOINTS}/scorer/deployments/blue", params=API, headers=auth).json() == created
    listed = client.get(f"{ENDPOINTS}/scorer/deployments", params=API, headers=auth).json()["value"]
    assert [d["name"] for d in listed] == ["blue"]
    updated = put(client, auth, f"{ENDPOINTS}/scorer", endpoint_body(defaults={"deploymentName": "blue"}), 200)
    assert updated["properties"]["defaults"] == {"deploymentName": "blue"}
    again = put(client, auth, f"{ENDPOINTS}/scorer/deployments/blue", deployment_body(miniBatchSize="1mb"), 200)
    assert again["properties"]["miniBatchSize"] == "1mb"


def test_a_bare_compute_name_and_an_mlflow_model_without_code(app, batch_ready, client, auth):
    mlflow = {"properties": {"modelUri": "azureml://datastores/workspaceblobstore/paths/LocalUpload/h/model",
                             "modelType": "mlflow_model"}}
    assert client.put(f"{WS_PATH}/models/flow/versions/1", params=API, headers=auth, json=mlflow).status_code == 201
    body = {"location": "local", "properties": {"model": {"assetId": f"{WS_PATH}/models/flow/versions/1",
                                                          "referenceType": "Id"}, "compute": "cpu", "properties": {}}}
    props = put(client, auth, f"{ENDPOINTS}/scorer/deployments/mlflow", body)["properties"]
    assert props["compute"] == f"{WS_PATH}/computes/cpu" and "codeConfiguration" not in props
    assert props["miniBatchSize"] == 10 and props["maxConcurrencyPerInstance"] == 1


def test_deletes_finish_at_once_and_the_default_goes_last(batch_ready, client, auth):
    put(client, auth, f"{ENDPOINTS}/scorer/deployments/blue", deployment_body())
    put(client, auth, f"{ENDPOINTS}/scorer", endpoint_body(defaults={"deploymentName": "blue"}), 200)
    assert_arm_error(client.delete(f"{ENDPOINTS}/scorer/deployments/blue", params=API, headers=auth), 409,
                     target="properties.defaults.deploymentName")
    put(client, auth, f"{ENDPOINTS}/scorer", endpoint_body(), 200)
    gone = client.delete(f"{ENDPOINTS}/scorer/deployments/blue", params=API, headers=auth)
    assert gone.status_code == 202
    assert client.get(gone.headers["Azure-AsyncOperation"], headers=auth).json()["status"] == "Succeeded"
    assert_arm_error(client.get(f"{ENDPOINTS}/scorer/deployments/blue", params=API, headers=auth), 404,
                     target="deploymentName")
    assert client.delete(f"{ENDPOINTS}/scorer/deployments/blue", params=API, headers=auth).status_code == 204
    put(client, auth, f"{ENDPOINTS}/scorer/deployments/green", deployment_body())
    assert client.delete(f"{ENDPOINTS}/scorer", params=API, headers=auth).status_code == 202
    assert_arm_error(client.get(f"{ENDPOINTS}/scorer", params=API, headers=auth), 404, target="endpointName")
    assert client.get(ENDPOINTS, params=API, headers=auth).json()["value"] == []


def _state(client, auth) -> tuple:
    endpoints = client.get(ENDPOINTS, params=API, headers=auth).json()["value"]
    deployments = {e["name"]: client.get(f"{ENDPOINTS}/{e['name']}/deployments", params=API, headers=auth).json()
                   for e in endpoints}
    return endpoints, deployments


BAD_DEPLOYMENTS = [
    (deployment_body(compute=f"{WS_PATH}/computes/nope"), "properties.compute"),
    (deployment_body(compute="my-ci"), "properties.compute"),
    (deployment_body(resources={"instanceCount": 3}), "properties.resources.instanceCount"),
    (deployment_body(codeConfiguration={"codeId": CODE, "scoringScript": "missing.py"}),
     "properties.codeConfiguration.scoringScript"),
    (deployment_body(codeConfiguration={"codeId": f"{WS_PATH}/codes/c/versions/9", "scoringScript": "score.py"}),
     "properties.codeConfiguration.codeId"),
    (deployment_body(model={"assetId": f"{WS_PATH}/models/nope/versions/1", "referenceType": "Id"}),
     "properties.model.assetId"),
    (deployment_body(environmentId=f"{WS_PATH}/environments/nope/versions/1"), "properties.environmentId"),
    (deployment_body(codeConfiguration=None, environmentId=None), "properties.codeConfiguration"),  # not MLflow
    (deployment_body(miniBatchSize="a few"), "properties.miniBatchSize"),
    (deployment_body(miniBatchSize=-3), "properties.miniBatchSize"),
    (deployment_body(outputAction="Everything"), "properties.outputAction"),
    (deployment_body(retrySettings={"maxRetries": 1, "timeout": "PT0S"}), "properties.retrySettings.timeout"),
    (deployment_body(deploymentConfiguration={"deploymentConfigurationType": "PipelineComponent",
                                              "componentId": {"assetId": f"{WS_PATH}/components/no/versions/1"}}),
     "properties.deploymentConfiguration.componentId.assetId"),
]


@pytest.mark.parametrize(("body", "target"), BAD_DEPLOYMENTS)
def test_bad_deployments_name_the_field_and_create_nothing(batch_ready, client, auth, body, target):
    put_ci(client, auth, "my-ci")
    before = _state(client, auth)
    assert_arm_error(client.put(f"{ENDPOINTS}/scorer/deployments/bad", params=API, headers=auth, json=body), 400,
                     target=target)
    assert _state(client, auth) == before


@pytest.mark.parametrize(("url", "body", "status", "target"), [
    (f"{ENDPOINTS}/scorer", endpoint_body(authMode="Key"), 400, "properties.authMode"),
    (f"{ENDPOINTS}/scorer", endpoint_body(defaults={"deploymentName": "nope"}), 400,
     "properties.defaults.deploymentName"),
    (f"{ENDPOINTS}/x", endpoint_body(), 400, "endpointName"),
    (f"{ENDPOINTS}/ghost/deployments/blue", deployment_body(), 404, "endpointName"),
    (f"{ENDPOINTS}/scorer/deployments/-no-", deployment_body(), 400, "deploymentName"),
])
def test_bad_endpoints_and_unknown_ones_name_the_field(batch_ready, client, auth, url, body, status, target):
    before = _state(client, auth)
    assert_arm_error(client.put(url, params=API, headers=auth, json=body), status, target=target)
    assert _state(client, auth) == before
    assert_arm_error(client.get(f"{ENDPOINTS}/ghost", params=API, headers=auth), 404, target="endpointName")
    assert client.delete(f"{ENDPOINTS}/ghost", params=API, headers=auth).status_code == 204
