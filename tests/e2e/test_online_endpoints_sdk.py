"""Managed online endpoints through the unmodified azure-ai-ml SDK and plain HTTP: a registered model, local
code and an image environment deployed as blue and green, keys and AMLToken tokens, invoke, get_logs, a 90/10
split over 1,000 plain requests, the deployment header, a stepped traffic shift under load with no failed
request, refusals, and deletion removing every container."""

import collections
import json
import re
import threading
import uuid
from pathlib import Path

import httpx
import pytest
from azure.ai.ml.entities import (
    CodeConfiguration,
    Environment,
    ManagedOnlineDeployment,
    ManagedOnlineEndpoint,
    Model,
    ProbeSettings,
)
from azure.core.exceptions import HttpResponseError

from emulator.runtime.docker import DockerRuntime
from tests.e2e.sdk_releases import NEWEST, run_probe
from tests.waiting import wait_until

pytestmark = pytest.mark.e2e
SCORE = """
import json, os

def init():
    global weight
    with open(os.path.join(os.environ["AZUREML_MODEL_DIR"], "model", "weight.txt")) as f:
        weight = int(f.read())
    print("init: weight", weight, flush=True)

def run(raw_data):
    data = json.loads(raw_data)["data"]
    return {"color": os.environ["COLOR"], "result": [x * weight for x in data]}
"""
PROBE = Path(__file__).with_name("endpoint_probe.py")
FAST = ProbeSettings(initial_delay=1, period=1, timeout=2, success_threshold=1, failure_threshold=30)


@pytest.fixture(scope="module", autouse=True)
def scoring(stack):
    """The router starts after the api: wait for it too."""
    assert stack.wait_healthy(timeout=60, check=stack.scoring_healthy), "the scoring router did not answer"


@pytest.fixture(scope="module")
def sources(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("online")
    (root / "model").mkdir()
    (root / "model" / "weight.txt").write_text("3")
    (root / "src").mkdir()
    (root / "src" / "score.py").write_text(SCORE)
    (root / "request.json").write_text(json.dumps({"data": [1, 2]}))
    return {"model": root / "model", "src": root / "src", "request": root / "request.json"}


def _deployment(endpoint: str, name: str, model, sources, instances: int = 1) -> ManagedOnlineDeployment:
    return ManagedOnlineDeployment(
        name=name, endpoint_name=endpoint, model=model, instance_type="Standard_DS2_v2", instance_count=instances,
        code_configuration=CodeConfiguration(code=str(sources["src"]), scoring_script="score.py"),
        environment=Environment(image="python:3.11-slim"), environment_variables={"COLOR": name},
        readiness_probe=FAST, liveness_probe=FAST)


def _servers(stack, endpoint: str):
    return DockerRuntime().list({"amlemu.stack": stack.label, "amlemu.role": "model-server",
                                 "amlemu.endpoint": endpoint})


def test_blue_green_through_the_sdk_and_plain_http(ml_client, stack, sources, rest, workspace_path):
    name = f"ep-{uuid.uuid4().hex[:6]}"
    model = ml_client.models.create_or_update(Model(name=f"{name}-model", path=str(sources["model"])))
    endpoint = ml_client.online_endpoints.begin_create_or_update(
        ManagedOnlineEndpoint(name=name, auth_mode="key")).result()
    assert endpoint.provisioning_state == "Succeeded" and endpoint.scoring_uri.endswith(f"/endpoints/{name}/score")
    blue = ml_client.online_deployments.begin_create_or_update(
        _deployment(name, "blue", model, sources, instances=2)).result()
    assert blue.provisioning_state == "Succeeded" and blue.instance_count == 2
    green = ml_client.online_deployments.begin_create_or_update(_deployment(name, "green", model, sources)).result()
    assert green.provisioning_state == "Succeeded"
    servers = _servers(stack, name)
    assert len(servers) == 3
    # A model server reaches neither redis nor the api (the scoring network has no route to them).
    for host, port in (("redis", 6379), ("api", 8443)):
        code, _ = DockerRuntime().exec(servers[0].id, ["python", "-c", "import socket, sys; "
                                                       f"socket.create_connection(({host!r}, {port}), timeout=3)"])
        assert code != 0, f"a model server reached {host}"
    endpoint.traffic = {"blue": 90, "green": 10}
    ml_client.online_endpoints.begin_create_or_update(endpoint).result()
    assert ml_client.online_endpoints.get(name).traffic == {"blue": 90, "green": 10}
    assert sorted(d.name for d in ml_client.online_deployments.list(name)) == ["blue", "green"]

    answer = ml_client.online_endpoints.invoke(name, request_file=str(sources["request"]), deployment_name="green")
    assert json.loads(answer) == {"color": "green", "result": [3, 6]}
    assert "init: weight 3" in ml_client.online_deployments.get_logs("blue", name, lines=50)

    key = ml_client.online_endpoints.get_keys(name).primary_key
    uri = endpoint.scoring_uri
    auth = {"Authorization": f"Bearer {key}"}
    with httpx.Client(timeout=30) as client:
        assert client.post(uri, json={"data": [1]}).status_code == 401
        assert client.post(uri, json={"data": [1]}, headers={"Authorization": "Bearer nope"}).status_code == 401
        unknown = client.post(uri, json={"data": [1]}, headers={**auth, "azureml-model-deployment": "red"})
        assert unknown.status_code == 404 and "red" in unknown.text
        answers = [client.post(uri, json={"data": [1]}, headers=auth) for _ in range(1000)]
        assert [a.text for a in answers if a.status_code != 200] == []
        colors = collections.Counter(a.json()["color"] for a in answers)
        # each request drawn at random (as Azure's traffic split is): 10% of 1000 has a spread of 9.5 requests, so
        # 50 either way is over 5 of them (a run in ten million), while 0, 50 or 100 percent is far outside
        assert abs(colors["green"] - 100) <= 50, colors

        # Blue to green in steps while a client keeps sending: no request fails.
        with SteadyLoad(uri, key) as load:
            for share in (70, 40, 10, 0):
                endpoint.traffic = {"blue": share, "green": 100 - share}
                ml_client.online_endpoints.begin_create_or_update(endpoint).result()
            # As soon as the update has returned, every request follows it.
            assert {client.post(uri, json={"data": [1]}, headers=auth).json()["color"] for _ in range(50)} == {"green"}
            wait_until(lambda: load.sent > 50, timeout=30, message="the steady load to send 50 requests")
            # The Studio's endpoint page shows green's traffic, from the router's counters, while it flows.
            studio = _studio(stack, rest)
            page = f"/studio{workspace_path}/onlineEndpoints/{name}"
            wait_until(lambda: _rate(studio.get(page).text, "green") > 1, timeout=30, message="green's rate on the page")
        assert load.failures == [] and load.sent > 50

    # Refusals name the problem and change nothing.
    endpoint.traffic = {"blue": 50, "green": 40}
    with pytest.raises(HttpResponseError, match="add up to 100"):
        ml_client.online_endpoints.begin_create_or_update(endpoint).result()
    with pytest.raises(HttpResponseError, match="traffic"):
        ml_client.online_deployments.begin_delete("green", name).result()
    assert ml_client.online_endpoints.get(name).traffic == {"blue": 0, "green": 100}  # get() fills in zeros

    # Blue has no traffic left: it can go, with its containers.
    ml_client.online_deployments.begin_delete("blue", name).result()
    assert [d.name for d in ml_client.online_deployments.list(name)] == ["green"]
    assert {c.labels["amlemu.deployment"] for c in _servers(stack, name)} == {"green"}
    # A regenerated key works at once, and the old one stops at once.
    ml_client.online_endpoints.begin_regenerate_keys(name, key_type="primary").result()
    fresh = ml_client.online_endpoints.get_keys(name).primary_key
    assert fresh != key
    assert httpx.post(uri, json={"data": [1]}, headers=auth).status_code == 401
    assert httpx.post(uri, json={"data": [1]}, headers={"Authorization": f"Bearer {fresh}"}).status_code == 200

    ml_client.online_endpoints.begin_delete(name).result()
    wait_until(lambda: _servers(stack, name) == [], timeout=60, message="the model servers to go")


def test_aml_token_endpoint_gets_a_token(ml_client, rest, workspace_path):
    name = f"tok-{uuid.uuid4().hex[:6]}"
    ml_client.online_endpoints.begin_create_or_update(ManagedOnlineEndpoint(name=name, auth_mode="aml_token")).result()
    token = ml_client.online_endpoints.get_keys(name)
    assert token.access_token and token.expiry_time_utc > 0
    endpoint = ml_client.online_endpoints.get(name)
    response = httpx.post(endpoint.scoring_uri, json={}, headers={"Authorization": f"Bearer {token.access_token}"})
    assert response.status_code == 404 and "No valid deployments" in response.text  # authorised, nothing deployed
    _refused_by_the_api(rest, workspace_path, token.access_token)
    ml_client.online_endpoints.begin_delete(name).result()


def test_aad_token_endpoint_takes_the_sdks_token_not_a_management_one(ml_client, rest, workspace_path):
    name = f"aad-{uuid.uuid4().hex[:6]}"
    ml_client.online_endpoints.begin_create_or_update(ManagedOnlineEndpoint(name=name, auth_mode="aad_token")).result()
    token = ml_client.online_endpoints.get_keys(name)  # the SDK's own credential.get_token(ml.azure.com)
    uri = ml_client.online_endpoints.get(name).scoring_uri
    response = httpx.post(uri, json={}, headers={"Authorization": f"Bearer {token.access_token}"})
    assert response.status_code == 404 and "No valid deployments" in response.text  # authorised, nothing deployed
    management = rest.headers["Authorization"]  # what the SDK's ARM calls carry
    response = httpx.post(uri, json={}, headers={"Authorization": management})
    assert response.status_code == 401 and "management token" in response.json()["message"]
    _refused_by_the_api(rest, workspace_path, token.access_token)
    ml_client.online_endpoints.begin_delete(name).result()


def _refused_by_the_api(rest, workspace_path: str, scoring_token: str) -> None:
    """An endpoint's scoring token is no management token."""
    response = rest.get(f"{workspace_path}/onlineEndpoints", headers={"Authorization": f"Bearer {scoring_token}"})
    assert response.status_code == 401
    assert response.json()["error"]["code"] == "InvalidAuthenticationTokenAudience"
    assert "scoring token" in response.json()["error"]["message"]


def _studio(stack, rest) -> httpx.Client:
    """A browser's session of the Studio, from the one-time link `amlemu studio` asks for."""
    link = rest.post("/_emulator/studio/session").json()["loginUrl"]
    client = httpx.Client(base_url=stack.url, verify=str(stack.ca_file), timeout=30, follow_redirects=True)
    assert client.get(link).status_code == 200
    return client


def _rate(page: str, deployment: str) -> float:
    row = page.split(f'data-deployment="{deployment}"', 1)[1].split("</tr>", 1)[0]
    found = re.search(r'data-rate="([\d.]+)"', row)
    return float(found.group(1)) if found else 0.0


class SteadyLoad:
    """A client sending requests one after another until stopped, keeping every failure."""

    def __init__(self, uri: str, key: str):
        self.uri, self.auth = uri, {"Authorization": f"Bearer {key}"}
        self.sent, self.failures, self.done = 0, [], threading.Event()
        self.thread = threading.Thread(target=self._run)

    def _run(self) -> None:
        with httpx.Client(timeout=30) as client:
            while not self.done.is_set():
                try:
                    response = client.post(self.uri, json={"data": [1]}, headers=self.auth)
                    if response.status_code != 200:
                        self.failures.append(f"{response.status_code} {response.text}")
                except httpx.HTTPError as exc:
                    self.failures.append(repr(exc))
                self.sent += 1

    def __enter__(self) -> "SteadyLoad":
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.done.set()
        self.thread.join()


def test_scaling_and_restarts_fail_no_request(ml_client, stack, sources):
    name = f"ep-{uuid.uuid4().hex[:6]}"
    model = ml_client.models.create_or_update(Model(name=f"{name}-model", path=str(sources["model"])))
    endpoint = ml_client.online_endpoints.begin_create_or_update(
        ManagedOnlineEndpoint(name=name, auth_mode="key")).result()
    ml_client.online_deployments.begin_create_or_update(_deployment(name, "blue", model, sources)).result()
    endpoint.traffic = {"blue": 100}
    ml_client.online_endpoints.begin_create_or_update(endpoint).result()
    key = ml_client.online_endpoints.get_keys(name).primary_key
    with SteadyLoad(endpoint.scoring_uri, key) as load:
        for count in (3, 1):
            deployment = ml_client.online_deployments.get("blue", name)
            deployment.instance_count = count
            assert ml_client.online_deployments.begin_create_or_update(deployment).result().instance_count == count
            wait_until(lambda c=count: len(_servers(stack, name)) == c, timeout=60, message=f"{count} server(s)")
        (survivor,) = [c.name for c in _servers(stack, name)]
        for service in ("api", "controller"):
            stack.compose("restart", service, capture=True)
            assert stack.wait_healthy(timeout=120)
        wait_until(lambda: load.sent > 200, timeout=60, message="requests after the restarts")
    assert load.failures == [] and load.sent > 200
    assert [c.name for c in _servers(stack, name)] == [survivor]  # adopted, not replaced
    again = ml_client.online_endpoints.get(name)
    assert again.traffic == {"blue": 100} and again.provisioning_state == "Succeeded"
    assert ml_client.online_deployments.get("blue", name).provisioning_state == "Succeeded"
    ml_client.online_endpoints.begin_delete(name).result()
    wait_until(lambda: _servers(stack, name) == [], timeout=60, message="the model servers to go")


@pytest.mark.parametrize("release", NEWEST)
def test_each_sdk_release_deploys_and_invokes(stack, release, tmp_path):
    name = "ep-v" + release.replace(".", "")
    seen, _ = run_probe(release, PROBE, name, tmp_path)
    assert seen == {"endpoint": ["Succeeded", "key", {"blue": 100}],
                    "deployment": ["Succeeded", 1, "Standard_DS2_v2"], "keys": True,
                    "invoke": {"echo": {"x": 1}}, "listed": ["blue"], "deleted": True}
