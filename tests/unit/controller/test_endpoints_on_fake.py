"""EndpointReconciler on FakeRuntime: the model-server containers of an online deployment, their probes answered by
the test (an httpx MockTransport, no network) and its serving image "built" at once, one pass at a time on the
test's clock. The Docker-backed versions are in tests/integration/test_endpoints_controller.py."""

import httpx
import pytest

from emulator.controller.reconcilers.endpoints import EndpointReconciler
from emulator.domain.jobs import artifacts
from emulator.domain.serving import model_server
from emulator.domain.storage import blob_access, datastores
from emulator.errors import RuntimeUnavailable
from emulator.runtime.labels import DEPLOYMENT, DEPLOYMENT_ID, ENDPOINT, GENERATION, ROLE, STACK
from emulator.services import assets, endpoints, events
from emulator.services.environments import Prepared
from emulator.services.workspaces import default_ref

IMAGE = "amlemu/serve:unit"
EP = "ep-unit"
FAST_PROBE = {"initialDelay": "PT0S", "period": "PT1S", "timeout": "PT1S", "successThreshold": 1,
              "failureThreshold": 3}


class Servers:
    """The model servers' health route as the probes reach it: 200 from the addresses told to answer."""

    def __init__(self):
        self.answering: set[str] = set()
        self.keys: set[str] = set()  # the key header each probe carried

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.keys.add(request.headers.get(model_server.KEY_HEADER, ""))
        return httpx.Response(200 if request.url.host in self.answering else 503)


@pytest.fixture
def servers() -> Servers:
    return Servers()


@pytest.fixture
def reconciler(settings, store, fake, clock, act, servers):
    reconciler = EndpointReconciler(settings, store, fake, clock, lambda env, progress: Prepared(image=IMAGE), act,
                                    httpx.Client(transport=httpx.MockTransport(servers)))
    yield reconciler
    reconciler.close()


def tick(reconciler: EndpointReconciler, azure) -> None:
    """One pass of the endpoints step; a serving image asked for in it is there by the next."""
    reconciler.tick(azure.containers("model-server"))
    for build in list(reconciler.builds.values()):
        build.result(timeout=5)


def deploy(azure, capacity: int = 1, compute: str | None = None) -> str:
    """Endpoint `EP`, deployment blue: a model, a scoring script and an environment, in the blob store and the store;
    on Kubernetes compute `compute` (its instance type "small"), if named."""
    ref, data, now = azure.ref, azure.settings.data_dir, azure.clock()
    account = blob_access.workspace_account(ref)
    (data / "blobs" / account / "code" / "src").mkdir(parents=True)
    (data / "blobs" / account / "code" / "src" / "score.py").write_text("def init(): pass\n")
    model = data / artifacts.blob_dir(datastores.locate(ref, datastores.BLOB_STORE, "models/m/model", "x"))
    model.mkdir(parents=True)
    (model / "weight.txt").write_text("3")
    with azure.store.transaction() as repo:
        assets.put(repo, ref, assets.MODELS, "m", "1", {"properties": {
            "modelUri": "azureml://datastores/workspaceblobstore/paths/models/m/model"}}, now)
        assets.put(repo, ref, assets.CODES, "c", "1", {"properties": {
            "codeUri": f"https://localhost:8443/blob/{account}/code/src", "isAnonymous": True}}, now)
        assets.put(repo, ref, assets.ENVIRONMENTS, "py", "1", {"properties": {"image": "python:3.11-slim"}}, now)
        endpoints.put_endpoint(repo, ref, repo.workspace(ref.key), EP, {"properties": {
            "authMode": "Key", **({"compute": compute} if compute else {})}}, now)
        body = {"sku": {"capacity": capacity}, "properties": {
            "model": ref.child_id("models", "m") + "/versions/1",
            "environmentId": ref.child_id("environments", "py") + "/versions/1",
            "codeConfiguration": {"codeId": ref.child_id("codes", "c") + "/versions/1", "scoringScript": "score.py"},
            "instanceType": "small" if compute else "Standard_DS2_v2", "readinessProbe": FAST_PROBE,
            "livenessProbe": FAST_PROBE, **({"endpointComputeType": "Kubernetes"} if compute else {})}}
        row, _op, _created = endpoints.put_deployment(repo, azure.settings, ref, EP, "blue", body, now)
        return row.key


def deployment(azure, key: str):
    with azure.store.transaction() as repo:
        return repo.online_deployment(key)


def test_a_deployment_starts_its_model_servers_succeeds_once_they_answer_and_goes_with_them(
        azure, reconciler, servers, fake, clock, settings, store):
    key = deploy(azure, capacity=2)
    tick(reconciler, azure)  # the serving image is asked for
    assert azure.containers("model-server") == [] and deployment(azure, key).provisioning_state == "Creating"
    tick(reconciler, azure)  # it is there: the servers start

    first, second = azure.containers("model-server")
    assert deployment(azure, key).image == IMAGE
    for container in (first, second):
        assert {STACK: "unit", ENDPOINT: EP, DEPLOYMENT: "blue", DEPLOYMENT_ID: key, GENERATION: "1"}.items() \
            <= container.labels.items()
    spec = azure.runs("model-server")[0]
    assert (spec.image, spec.network, spec.cpus, spec.user) == (IMAGE, settings.scoring_network(default_ref(settings).key),
                                                                0.5, "1000:1000")
    assert len(spec.read_only) == 2 and set(spec.read_only) <= set(spec.mounts.values())
    assert spec.drop_capabilities and not any("docker.sock" in source for source in spec.mounts)

    servers.answering.add(first.ip)  # the second is still loading its model
    tick(reconciler, azure)
    row = deployment(azure, key)
    assert row.provisioning_state == "Creating"
    assert {i["name"]: i["ready"] for i in row.instances} == {first.name: True, second.name: False}
    assert row.instances[0]["address"] == f"{first.ip}:{model_server.PORT}"
    servers.answering.add(second.ip)
    clock.advance(1)
    tick(reconciler, azure)
    assert deployment(azure, key).provisioning_state == "Succeeded"
    assert azure.operations(key) == [("Create", "Succeeded")]
    assert servers.keys == {model_server.server_key(reconciler.secret, key)}  # every probe with the server's key

    clock.advance(1)
    with store.transaction() as repo:
        endpoints.delete_deployment(repo, azure.ref, EP, "blue", clock())
    tick(reconciler, azure)
    assert {first.id, second.id} <= azure.removed() and azure.containers("model-server") == []
    assert deployment(azure, key).instances == []  # the router stops sending it requests at once
    tick(reconciler, azure)
    assert deployment(azure, key) is None
    assert azure.operations(key) == [("Create", "Succeeded"), ("Delete", "Succeeded")]
    # On the timeline once each: its instances as they came and went (what the cost meter bills), and the roll-out.
    with store.reading() as repo:
        seen = [(e.kind, e.data) for e in events.after(repo, None, 0) if e.subject == key]
    assert [(k, d.get("instances"), d.get("ready")) for k, d in seen] == [
        ("deployment.instances", 2, 1), ("deployment.instances", 2, 2),
        ("deployment.rolled", None, None), ("deployment.instances", 0, 0)]


def test_a_model_server_that_cannot_start_fails_the_deployment_with_resource_not_ready(azure, reconciler, fake):
    fake.fail_next_run(RuntimeUnavailable("Docker engine error: no space left on device"), labels={ROLE: "model-server"})
    key = deploy(azure)
    tick(reconciler, azure)
    tick(reconciler, azure)

    row = deployment(azure, key)
    assert row.provisioning_state == "Failed" and azure.containers("model-server") == []
    assert row.error == {"code": "ResourceNotReady", "message": "The model server of deployment 'blue' could not "
                                                                "start: Docker engine error: no space left on device"}
    assert azure.operations(key) == [("Create", "Failed")]
    for _ in range(3):  # a failed deployment starts nothing more until it is updated
        tick(reconciler, azure)
    assert len(azure.runs("model-server")) == 1


def test_a_model_server_that_exits_before_it_is_ready_fails_the_deployment_with_its_log(
        azure, reconciler, fake, settings):
    key = deploy(azure)
    tick(reconciler, azure)
    tick(reconciler, azure)
    (server,) = azure.containers("model-server")
    log = endpoints.logs_dir(settings, EP, "blue") / f"{server.name}.log"  # what the server writes, mounted
    log.write_text("Traceback (most recent call last):\nRuntimeError: the model would not load\n")
    fake.exit(server.id, 1)
    tick(reconciler, azure)

    row = deployment(azure, key)
    assert row.provisioning_state == "Failed" and row.error["code"] == "ResourceNotReady"
    assert "exited with code 1 before it was ready" in row.error["message"]
    assert row.error["message"].endswith("RuntimeError: the model would not load")
    assert server.id in azure.removed() and azure.containers("model-server") == []


def test_a_server_that_stops_answering_its_liveness_probe_is_replaced(azure, reconciler, servers, clock):
    key = deploy(azure)
    tick(reconciler, azure)
    tick(reconciler, azure)
    (server,) = azure.containers("model-server")
    servers.answering.add(server.ip)
    tick(reconciler, azure)
    assert deployment(azure, key).provisioning_state == "Succeeded"

    servers.answering.clear()  # stuck: its health route no longer answers
    for _ in range(FAST_PROBE["failureThreshold"] - 1):
        clock.advance(1)
        tick(reconciler, azure)
    assert azure.containers("model-server") == [server]
    clock.advance(1)
    tick(reconciler, azure)

    (replacement,) = azure.containers("model-server")
    assert server.id in azure.removed() and replacement.id != server.id
    assert replacement.labels[GENERATION] == "1" and deployment(azure, key).provisioning_state == "Succeeded"
