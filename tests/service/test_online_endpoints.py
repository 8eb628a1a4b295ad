"""Online endpoints and deployments (ARM), in-process through TestClient: shapes the SDK parses, keys and
tokens, traffic rules, and a bad-input matrix where each refusal names the field and changes nothing. The
controller's part (containers, readiness) is in tests/integration/test_endpoints_controller.py."""

import pytest

from emulator import tokens
from emulator.domain.ids import WorkspaceRef
from emulator.domain.jobs import artifacts
from emulator.domain.storage import blob_access, datastores
from emulator.store.tables import OnlineDeployment, OnlineEndpoint, Operation
from tests.service.test_api import API, OP_URL, WS_PATH, assert_arm_error

ENDPOINTS = f"{WS_PATH}/onlineEndpoints"
REF = WorkspaceRef("00000000-0000-0000-0000-000000000000", "amlemu", "amlemu")
ACCOUNT = blob_access.workspace_account(REF)


def setup_assets(app, client, auth, script: str = "score.py") -> None:
    """A code snapshot with a scoring script, an environment and a model, as the SDK would have made them."""
    data = app.state.context.settings.data_dir
    src = data / "blobs" / ACCOUNT / "code-1" / "src"
    src.mkdir(parents=True, exist_ok=True)
    (src / script).write_text("def init():\n    pass\n\ndef run(data):\n    return data\n")
    model = data / artifacts.blob_dir(datastores.locate(REF, datastores.BLOB_STORE, "LocalUpload/h/model", "x"))
    model.mkdir(parents=True, exist_ok=True)
    (model / "weights.txt").write_text("42")
    code = {"properties": {"codeUri": f"https://localhost:8443/blob/{ACCOUNT}/code-1/src", "isAnonymous": True}}
    assert client.put(f"{WS_PATH}/codes/c/versions/1", params=API, headers=auth, json=code).status_code == 201
    env = {"properties": {"image": "python:3.11-slim"}}
    assert client.put(f"{WS_PATH}/environments/env/versions/1", params=API, headers=auth, json=env).status_code == 201
    model_body = {"properties": {"modelUri": "azureml://datastores/workspaceblobstore/paths/LocalUpload/h/model",
                                 "modelType": "custom_model"}}
    assert client.put(f"{WS_PATH}/models/m/versions/1", params=API, headers=auth, json=model_body).status_code == 201


def endpoint_body(auth_mode: str = "Key", traffic: dict | None = None, **props) -> dict:
    return {"location": "local", "identity": {"type": "SystemAssigned"}, "tags": {},
            "properties": {"authMode": auth_mode, "properties": {}, "traffic": traffic or {}, "mirrorTraffic": {},
                           **props}}


def deployment_body(capacity: int = 1, **props) -> dict:
    return {"location": "local", "sku": {"name": "Default", "capacity": capacity}, "tags": {},
            "properties": {"endpointComputeType": "Managed", "instanceType": "Standard_DS3_v2",
                           "model": f"{WS_PATH}/models/m/versions/1",
                           "codeConfiguration": {"codeId": f"{WS_PATH}/codes/c/versions/1",
                                                 "scoringScript": "score.py"},
                           "environmentId": f"{WS_PATH}/environments/env/versions/1",
                           "environmentVariables": {}, "appInsightsEnabled": False, "properties": {}, **props}}


@pytest.fixture
def ready(app, client, auth):
    setup_assets(app, client, auth)
    response = client.put(f"{ENDPOINTS}/ep-one", params=API, headers=auth, json=endpoint_body())
    assert response.status_code == 201, response.text
    return response


def test_endpoint_create_carries_what_the_sdk_reads(ready, client, auth):
    body = ready.json()
    assert OP_URL.match(ready.headers["Azure-AsyncOperation"]) and ready.headers["Retry-After"] == "1"
    assert body["id"] == f"{ENDPOINTS}/ep-one" and body["kind"] == "Managed"
    props = body["properties"]
    assert props["provisioningState"] == "Succeeded" and props["authMode"] == "Key"
    assert props["scoringUri"] == "http://127.0.0.1:8444/endpoints/ep-one/score"
    assert props["swaggerUri"].endswith("/endpoints/ep-one/swagger.json")
    status = client.get(ready.headers["Azure-AsyncOperation"], headers=auth).json()
    assert status["status"] == "Succeeded"
    assert client.get(f"{ENDPOINTS}/EP-ONE", params=API, headers=auth).json() == body  # names case-insensitive
    listed = client.get(ENDPOINTS, params=API, headers=auth).json()
    assert [e["name"] for e in listed["value"]] == ["ep-one"]


def test_keys_list_and_regenerate(ready, client, auth):
    keys = client.post(f"{ENDPOINTS}/ep-one/listKeys", params=API, headers=auth).json()
    assert set(keys) == {"primaryKey", "secondaryKey"} and keys["primaryKey"] != keys["secondaryKey"]
    # The SDK sends the current key as keyValue: a new one is made.
    regen = client.post(f"{ENDPOINTS}/ep-one/regenerateKeys", params=API, headers=auth,
                        json={"keyType": "Primary", "keyValue": keys["primaryKey"]})
    assert regen.status_code == 202 and OP_URL.match(regen.headers["Location"])
    after = client.post(f"{ENDPOINTS}/ep-one/listKeys", params=API, headers=auth).json()
    assert after["primaryKey"] != keys["primaryKey"] and after["secondaryKey"] == keys["secondaryKey"]
    chosen = client.post(f"{ENDPOINTS}/ep-one/regenerateKeys", params=API, headers=auth,
                         json={"keyType": "Secondary", "keyValue": "my-own-key"})
    assert chosen.status_code == 202
    assert client.post(f"{ENDPOINTS}/ep-one/listKeys", params=API, headers=auth).json()["secondaryKey"] == "my-own-key"
    assert_arm_error(client.post(f"{ENDPOINTS}/ep-one/regenerateKeys", params=API, headers=auth,
                                 json={"keyType": "Tertiary"}), 400, target="keyType")
    assert_arm_error(client.post(f"{ENDPOINTS}/ep-one/token", params=API, headers=auth), 400)


def test_aml_token_endpoints_get_tokens_the_router_accepts(app, ready, client, auth):
    response = client.put(f"{ENDPOINTS}/ep-token", params=API, headers=auth, json=endpoint_body("AMLToken"))
    assert response.json()["properties"]["authMode"] == "AMLToken"
    token = client.post(f"{ENDPOINTS}/ep-token/token", params=API, headers=auth).json()
    assert token["tokenType"] == "Bearer" and token["expiryTimeUtc"] > token["refreshAfterTimeUtc"]
    secret = app.state.context.secret
    assert tokens.endpoint_of(secret, token["accessToken"]) == f"{ENDPOINTS}/ep-token".lower()
    assert tokens.endpoint_of(secret, "nonsense") is None
    assert_arm_error(client.post(f"{ENDPOINTS}/ep-token/listKeys", params=API, headers=auth), 400)


def test_deployment_create_fills_defaults_and_waits_for_the_controller(ready, client, auth):
    response = client.put(f"{ENDPOINTS}/ep-one/deployments/blue", params=API, headers=auth, json=deployment_body(2))
    assert response.status_code == 201, response.text
    body = response.json()
    props = body["properties"]
    assert props["provisioningState"] == "Creating" and body["sku"]["capacity"] == 2
    assert props["scaleSettings"] == {"scaleType": "Default"}
    assert {"requestTimeout", "maxConcurrentRequestsPerInstance"} <= set(props["requestSettings"])
    assert props["livenessProbe"]["failureThreshold"] == 30 and props["readinessProbe"]["period"] == "PT10S"
    status = client.get(response.headers["Azure-AsyncOperation"], headers=auth).json()
    assert status["status"] == "InProgress"
    got = client.get(f"{ENDPOINTS}/ep-one/deployments/blue", params=API, headers=auth).json()
    assert got == body
    listed = client.get(f"{ENDPOINTS}/ep-one/deployments", params=API, headers=auth).json()["value"]
    assert [d["name"] for d in listed] == ["blue"]
    assert client.post(f"{ENDPOINTS}/ep-one/deployments/blue/getLogs", params=API, headers=auth,
                       json={"tail": 10}).json() == {"content": ""}


def test_traffic_update_and_delete_rules(app, ready, client, auth):
    for name in ("blue", "green"):
        client.put(f"{ENDPOINTS}/ep-one/deployments/{name}", params=API, headers=auth, json=deployment_body())
    shifted = client.put(f"{ENDPOINTS}/ep-one", params=API, headers=auth,
                         json=endpoint_body(traffic={"blue": 90, "green": 10}))
    assert shifted.status_code == 200 and shifted.json()["properties"]["traffic"] == {"blue": 90, "green": 10}
    refused = client.delete(f"{ENDPOINTS}/ep-one/deployments/green", params=API, headers=auth)
    assert_arm_error(refused, 409, target="properties.traffic.green")
    client.put(f"{ENDPOINTS}/ep-one", params=API, headers=auth, json=endpoint_body(traffic={"blue": 100}))
    deleted = client.delete(f"{ENDPOINTS}/ep-one/deployments/green", params=API, headers=auth)
    assert deleted.status_code == 202 and OP_URL.match(deleted.headers["Location"])
    with app.state.context.store.transaction() as repo:
        assert repo.online_deployment(f"{ENDPOINTS}/ep-one/deployments/green").provisioning_state == "Deleting"
    assert client.delete(f"{ENDPOINTS}/ep-one/deployments/nothing", params=API, headers=auth).status_code == 204
    gone = client.delete(f"{ENDPOINTS}/ep-one", params=API, headers=auth)
    assert gone.status_code == 202
    with app.state.context.store.transaction() as repo:
        assert {d.provisioning_state for d in repo.online_deployments(f"{ENDPOINTS}/ep-one")} == {"Deleting"}
    assert_arm_error(client.put(f"{ENDPOINTS}/ep-one", params=API, headers=auth, json=endpoint_body()), 409)
    assert client.delete(f"{ENDPOINTS}/nothing", params=API, headers=auth).status_code == 204


def test_updates_replace_instances_only_when_the_spec_changes(app, ready, client, auth):
    url = f"{ENDPOINTS}/ep-one/deployments/blue"
    client.put(url, params=API, headers=auth, json=deployment_body())
    scaled = client.put(url, params=API, headers=auth, json=deployment_body(3))
    assert scaled.status_code == 200 and scaled.json()["properties"]["provisioningState"] == "Scaling"
    changed = client.put(url, params=API, headers=auth, json=deployment_body(3, environmentVariables={"A": "1"}))
    assert changed.json()["properties"]["provisioningState"] == "Updating"
    with app.state.context.store.transaction() as repo:
        assert repo.online_deployment(url).generation == 2


# ---------------------------------------------------------------- refusals change nothing

def snapshot(app) -> list:
    with app.state.context.store.transaction() as repo:
        session = repo.session
        return [sorted((r.key, r.provisioning_state, repr(r.body)) for r in session.query(OnlineEndpoint)),
                sorted((r.key, r.provisioning_state, r.generation, repr(r.body))
                       for r in session.query(OnlineDeployment)),
                session.query(Operation).count()]


@pytest.fixture(scope="module")
def seeded(shared):
    setup_assets(shared.app, shared.client, shared.auth)
    for name, body in (("ep-base", endpoint_body()),):
        assert shared.client.put(f"{ENDPOINTS}/{name}", params=API, headers=shared.auth, json=body).status_code == 201
    url = f"{ENDPOINTS}/ep-base/deployments/blue"
    assert shared.client.put(url, params=API, headers=shared.auth, json=deployment_body()).status_code == 201
    assert shared.client.put(f"{ENDPOINTS}/ep-base", params=API, headers=shared.auth,
                             json=endpoint_body(traffic={"blue": 100})).status_code == 200
    return shared


WS_OTHER = WS_PATH.replace("/workspaces/amlemu", "/workspaces/nope")
BAD = [
    ("put", f"{ENDPOINTS}/e", endpoint_body(), 400, "endpointName"),
    ("put", f"{ENDPOINTS}/ep-new", endpoint_body("Password"), 400, "properties.authMode"),
    ("put", f"{ENDPOINTS}/ep-new", endpoint_body(traffic={"blue": 100}), 400, "properties.traffic.blue"),
    ("put", f"{ENDPOINTS}/ep-base", endpoint_body(traffic={"blue": 60}), 400, "properties.traffic"),
    ("put", f"{ENDPOINTS}/ep-base", endpoint_body(traffic={"red": 100}), 400, "properties.traffic.red"),
    ("put", f"{ENDPOINTS}/ep-base", endpoint_body(traffic={"blue": 100}, mirrorTraffic={"blue": 10}), 400,
     "properties.mirrorTraffic.blue"),
    ("put", f"{ENDPOINTS}/ep-new", endpoint_body(compute="k8s"), 400, "properties.compute"),
    ("put", f"{ENDPOINTS}/ep-new", {"properties": "x"}, 400, "properties"),
    ("put", f"{ENDPOINTS}/ep-new/deployments/blue", deployment_body(), 404, "endpointName"),
    ("put", f"{ENDPOINTS}/ep-base/deployments/b_1", deployment_body(), 400, "deploymentName"),
    ("put", f"{ENDPOINTS}/ep-base/deployments/green", deployment_body(model=f"{WS_PATH}/models/zz/versions/1"), 400,
     "properties.model"),
    ("put", f"{ENDPOINTS}/ep-base/deployments/green",
     deployment_body(environmentId=f"{WS_PATH}/environments/zz/versions/9"), 400, "properties.environmentId"),
    ("put", f"{ENDPOINTS}/ep-base/deployments/green",
     deployment_body(codeConfiguration={"codeId": f"{WS_PATH}/codes/c/versions/1", "scoringScript": "missing.py"}),
     400, "properties.codeConfiguration.scoringScript"),
    ("put", f"{ENDPOINTS}/ep-base/deployments/green", deployment_body(instanceType="Standard_Nope"), 400,
     "properties.instanceType"),
    ("put", f"{ENDPOINTS}/ep-base/deployments/green", deployment_body(capacity=-1), 400, "sku.capacity"),
    ("delete", f"{ENDPOINTS}/ep-base/deployments/blue", None, 409, "properties.traffic.blue"),
    ("get", f"{ENDPOINTS}/ep-base/deployments/none", None, 404, "deploymentName"),
    ("get", f"{ENDPOINTS}/none", None, 404, "endpointName"),
    ("post", f"{ENDPOINTS}/none/listKeys", None, 404, "endpointName"),
    ("post", f"{ENDPOINTS}/ep-base/deployments/blue/getLogs", {"tail": -1}, 400, "tail"),
    ("post", f"{ENDPOINTS}/ep-base/deployments/blue/getLogs", {"containerType": "Sidecar"}, 400, "containerType"),
    ("put", f"{WS_OTHER}/onlineEndpoints/ep-new", endpoint_body(), 404, None),
]


@pytest.mark.parametrize("method, url, body, status, target", BAD, ids=[f"{b[0]} {b[4]}" for b in BAD])
def test_bad_input_is_refused_naming_the_field_and_changes_nothing(seeded, method, url, body, status, target):
    before = snapshot(seeded.app)
    kwargs = {"json": body} if body is not None else {}
    response = seeded.client.request(method.upper(), url, params=API, headers=seeded.auth, **kwargs)
    assert_arm_error(response, status, target=target)
    assert snapshot(seeded.app) == before


def test_amlemu_status_lists_endpoints_and_deployments(ready, client, auth):
    from emulator.cli.main import _endpoint_lines

    client.put(f"{ENDPOINTS}/ep-one/deployments/blue", params=API, headers=auth, json=deployment_body(2))
    client.headers.update(auth)
    client.params = API
    assert _endpoint_lines(client, WS_PATH) == [
        "endpoint ep-one (Key, Succeeded): http://127.0.0.1:8444/endpoints/ep-one/score  traffic none",
        "  deployment blue: Creating, 2 × Standard_DS3_v2"]
