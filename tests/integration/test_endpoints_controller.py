"""Online deployments on the real Docker engine: model-server containers of the serving image (environment +
azureml-inference-server-http), readiness, a failing init(), replacement, scaling and deletion."""

import contextlib
import threading
from datetime import UTC, datetime

import httpx
import pytest

from emulator import tokens
from emulator.domain.jobs import artifacts
from emulator.domain.serving import deployments, model_server
from emulator.domain.storage import datastores
from emulator.services import assets, endpoints
from emulator.store.tables import Operation

TIMEOUT = 300.0  # the first run builds the serving image (pip, from the PyPI mirror)
LONG_DELAY = 120
SCORE = """
import json, os

def init():
    global weight
    with open(os.path.join(os.environ["AZUREML_MODEL_DIR"], "model", "weight.txt")) as f:
        weight = int(f.read())
    print("init done, weight", weight)

def run(raw_data):
    data = json.loads(raw_data)["data"]
    return {"result": [x * weight for x in data], "model_dir": os.environ["AZUREML_MODEL_DIR"],
            "uid": os.getuid()}
"""
BROKEN = "def init():\n    raise RuntimeError('the model would not load')\n\ndef run(raw_data):\n    return 1\n"
FAST_PROBE = {"initialDelay": "PT0S", "period": "PT0.5S", "timeout": "PT2S", "successThreshold": 1,
              "failureThreshold": 30}


@pytest.fixture
def scoring_network(lab, runtime):
    yield lab.settings.scoring_network(lab.ref.key)
    for container in runtime.list({"amlemu.stack": lab.settings.stack}):
        runtime.remove(container.id)
    runtime.remove_network(lab.settings.scoring_network(lab.ref.key))


def model(lab, name: str = "m") -> str:
    where = datastores.locate(lab.ref, datastores.BLOB_STORE, f"models/{name}/model", "x")
    folder = lab.settings.data_dir / artifacts.blob_dir(where)
    folder.mkdir(parents=True)
    (folder / "weight.txt").write_text("3")
    with lab.store.transaction() as repo:
        assets.put(repo, lab.ref, assets.MODELS, name, "1", {"properties": {
            "modelUri": f"azureml://datastores/workspaceblobstore/paths/models/{name}/model"}}, datetime.now(UTC))
    return lab.ref.child_id("models", name) + "/versions/1"


def deploy(lab, endpoint: str, name: str, script: str, capacity: int = 1, **props) -> None:
    now = datetime.now(UTC)
    code_id = lab.code({"score.py": script})
    body = {"sku": {"capacity": capacity}, "properties": {
        "model": model(lab, f"{endpoint}-{name}"), "environmentId": lab.environment(),
        "codeConfiguration": {"codeId": code_id, "scoringScript": "score.py"}, "instanceType": "Standard_DS2_v2",
        "readinessProbe": FAST_PROBE, "livenessProbe": {**FAST_PROBE, "failureThreshold": 3}, **props}}
    with lab.store.transaction() as repo:
        workspace = repo.workspace(lab.ref.key)
        if repo.online_endpoint(lab.ref.child_id("onlineEndpoints", endpoint)) is None:
            endpoints.put_endpoint(repo, lab.ref, workspace, endpoint, {"properties": {"authMode": "Key"}}, now)
        endpoints.put_deployment(repo, lab.settings, lab.ref, endpoint, name, body, now)


def deployment(lab, endpoint: str, name: str):
    with lab.store.transaction() as repo:
        return repo.online_deployment(lab.ref.child_id("onlineEndpoints", endpoint) + f"/deployments/{name}")


def wait_state(lab, endpoint: str, name: str, state: str, timeout: float = TIMEOUT):
    return lab.wait(lambda: (d := deployment(lab, endpoint, name)) and d.provisioning_state == state and d,
                    timeout, f"deployment {name} to be {state}")


def servers(lab, endpoint: str):
    return lab.runtime.list({"amlemu.stack": lab.settings.stack, "amlemu.role": "model-server",
                             "amlemu.endpoint": endpoint})


def server_key(lab, row) -> dict[str, str]:
    """What the scoring router adds to each request (a model server refuses any request without it)."""
    secret = tokens.load_secret(lab.settings.data_dir / "token.key")
    return {model_server.KEY_HEADER: model_server.server_key(secret, row.key)}


def score(address: str, data: list, key: dict[str, str]) -> dict:
    response = httpx.post(f"http://{address}/score", json={"data": data}, timeout=10, headers=key)
    assert response.status_code == 200, response.text
    return response.json()


def test_readiness_is_tried_from_the_containers_start_without_waiting_out_its_initial_delay(lab, scoring_network):
    """Ready before the probes' initial delay has passed: tried early. The delay is long (Azure's default is 10 s)
    so that a server slow to start on a loaded machine still answers well within it."""
    probe = {**deployments.DEFAULT_PROBE, "initialDelay": f"PT{LONG_DELAY}S"}  # readiness and liveness alike
    deploy(lab, "ep-quick", "blue", SCORE, readinessProbe=probe, livenessProbe=probe)
    row = wait_state(lab, "ep-quick", "blue", "Succeeded")
    (server,) = servers(lab, "ep-quick")
    started = lab.runtime.find(server.id).started_at
    succeeded = row.modified_at if row.modified_at.tzinfo else row.modified_at.replace(tzinfo=UTC)
    assert 0 < (succeeded - started).total_seconds() < LONG_DELAY, (started, succeeded)
    assert [i["ready"] for i in row.instances] == [True]


def test_a_deployment_serves_from_its_containers_and_heals(lab, scoring_network, docker_client):
    deploy(lab, "ep-heal", "blue", SCORE, capacity=2)
    row = wait_state(lab, "ep-heal", "blue", "Succeeded")
    assert row.image.startswith("amlemu/serve:")
    ready = [i for i in row.instances if i["ready"]]
    assert len(ready) == 2 and len(servers(lab, "ep-heal")) == 2
    answer = score(ready[0]["address"], [1, 2], server_key(lab, row))
    assert answer == {"result": [3, 6], "model_dir": "/var/azureml-app/azureml-models/ep-heal-blue/1", "uid": 1000}
    # From the host through its bridge address, without the router's key (or with another deployment's): refused.
    for key in ({}, {model_server.KEY_HEADER: "0" * 32}):
        refused = httpx.post(f"http://{ready[0]['address']}/score", json={"data": [1]}, timeout=10, headers=key)
        assert refused.status_code == 403 and "scoring URL" in refused.json()["error"]["message"]
    # The instance type's limits, unprivileged, on the scoring network only, model and code read-only.
    attrs = docker_client.containers.get(ready[0]["name"]).attrs
    assert attrs["HostConfig"]["NanoCpus"] == int(0.5 * 1e9) and attrs["Config"]["User"] == "1000:1000"
    assert list(attrs["NetworkSettings"]["Networks"]) == [scoring_network]
    assert {m["Destination"]: m["RW"] for m in attrs["Mounts"]} == {
        "/var/azureml-app/src": False, "/var/azureml-app/azureml-models/ep-heal-blue/1/model": False,
        "/var/azureml-logs": True}
    assert not any("docker.sock" in m["Source"] for m in attrs["Mounts"])
    # A killed container is replaced.
    killed = ready[0]["name"]
    docker_client.containers.get(killed).kill()
    lab.wait(lambda: len([i for i in deployment(lab, "ep-heal", "blue").instances
                          if i["ready"] and i["name"] != killed]) == 2, TIMEOUT, "a replacement")
    assert killed not in {c.name for c in servers(lab, "ep-heal")}
    # Scale down: one drains, then goes.
    with lab.store.transaction() as repo:
        row = repo.online_deployment(row.key)
        endpoints.put_deployment(repo, lab.settings, lab.ref, "ep-heal", "blue",
                                 {**{k: v for k, v in row.body.items() if k != "refs"}, "sku": {"capacity": 1}},
                                 datetime.now(UTC))
    assert deployment(lab, "ep-heal", "blue").provisioning_state == "Scaling"
    wait_state(lab, "ep-heal", "blue", "Succeeded")
    assert len(servers(lab, "ep-heal")) == 1
    # getLogs serves the inference server's log.
    logs = endpoints.logs(lab.settings, deployment(lab, "ep-heal", "blue"),
                          _endpoint(lab, "ep-heal"), {"tail": 200})["content"]
    assert "init done, weight 3" in logs
    # Deleting the endpoint removes every container, then the records.
    with lab.store.transaction() as repo:
        endpoints.delete_endpoint(repo, lab.ref, "ep-heal", datetime.now(UTC))
    lab.wait(lambda: _endpoint(lab, "ep-heal") is None, 60, "the endpoint to go")
    assert servers(lab, "ep-heal") == []


def _endpoint(lab, name):
    with lab.store.transaction() as repo:
        return repo.online_endpoint(lab.ref.child_id("onlineEndpoints", name))


def test_a_failing_init_fails_the_deployment_with_its_log(lab, scoring_network):
    deploy(lab, "ep-broken", "blue", BROKEN)
    row = wait_state(lab, "ep-broken", "blue", "Failed")
    assert row.error["code"] == "ResourceNotReady"
    assert "the model would not load" in row.error["message"]
    logs = endpoints.logs(lab.settings, row, _endpoint(lab, "ep-broken"), {"tail": 100})["content"]
    assert "RuntimeError: the model would not load" in logs
    lab.wait(lambda: servers(lab, "ep-broken") == [], 30, "the failed container to go")
    with lab.store.transaction() as repo:
        op = repo.session.query(Operation).filter_by(resource_key=row.key).one()
        assert op.status == "Failed" and op.error["code"] == "ResourceNotReady"


def test_a_server_that_never_gets_ready_fails_after_its_readiness_threshold(lab, scoring_network):
    hangs = "import threading\n\ndef init():\n    threading.Event().wait()\n\ndef run(raw_data):\n    return 1\n"
    deploy(lab, "ep-stuck", "blue", hangs, readinessProbe={**FAST_PROBE, "failureThreshold": 4})
    row = wait_state(lab, "ep-stuck", "blue", "Failed")
    assert "failed its readiness probe 4 times" in row.error["message"]
    lab.wait(lambda: servers(lab, "ep-stuck") == [], 30, "the stuck container to go")


def test_an_environment_that_cannot_build_fails_the_deployment_once(lab, scoring_network):
    conda = "dependencies:\n- python=3.11\n- pip:\n  - amlemu-no-such-package==9.9.9\n"
    env_id = lab.environment("broken-env", condaFile=conda)
    deploy(lab, "ep-nobuild", "blue", SCORE, environmentId=env_id)
    row = wait_state(lab, "ep-nobuild", "blue", "Failed")
    assert row.error["code"] == "ImageBuildFailure" and "amlemu-no-such-package" in row.error["message"]
    for _ in range(3):  # a failed build is not retried pass after pass
        lab.controller.tick(wait_seconds=0.2)
    assert lab.controller.endpoints.builds == {}
    logs = endpoints.logs(lab.settings, row, _endpoint(lab, "ep-nobuild"), {"containerType": "StorageInitializer"})
    assert "amlemu-no-such-package" in logs["content"]


def test_a_server_that_stops_answering_its_liveness_probe_is_replaced(lab, scoring_network):
    hangs_on_request = ("import threading\n\ndef init():\n    pass\n\n"
                        "def run(raw_data):\n    threading.Event().wait()\n")
    deploy(lab, "ep-live", "blue", hangs_on_request,
           livenessProbe={**FAST_PROBE, "timeout": "PT0.5S", "failureThreshold": 3})
    row = wait_state(lab, "ep-live", "blue", "Succeeded")
    (first,) = row.instances
    # The server's one worker gets stuck in run(): its health route stops answering.
    def request_that_hangs() -> None:
        with contextlib.suppress(httpx.HTTPError):  # the container goes with the request in it
            httpx.post(f"http://{first['address']}/score", json={}, timeout=120, headers=server_key(lab, row))
    threading.Thread(target=request_that_hangs, daemon=True).start()
    lab.wait(lambda: [i["name"] for i in deployment(lab, "ep-live", "blue").instances if i["ready"]] not in
             ([], [first["name"]]), TIMEOUT, "a replacement for the stuck server")
    assert first["name"] not in {c.name for c in servers(lab, "ep-live")}
