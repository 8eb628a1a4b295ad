"""A Kubernetes online deployment whose cluster a kubeconfig reaches, at the API boundary: the endpoint reconciler makes
its model servers as pods through the official client against a stand-in API server (tests/kube_api.py), with the
files' scope recorded and claimed for each pod; it probes them, and the router reaches them, through the API server's
pod proxy (here to a small HTTP server on a loopback address, the pod's IP); deleting the deployment deletes its pods.
No Docker: the controller's own runtime starts nothing."""

import asyncio
import json
import random
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from emulator import pki
from emulator.controller.reconcilers.endpoints import EndpointReconciler
from emulator.controller.specs.pods import FETCH
from emulator.controller.specs.serving_pods import SERVER
from emulator.dispatch import protocol, rank_files
from emulator.domain.serving import model_server
from emulator.scoring import pod_hops, table
from emulator.services import endpoints
from emulator.services.environments import Prepared
from tests.unit.controller.conftest import AKS
from tests.unit.controller.test_endpoints_on_fake import EP, IMAGE, deploy
from tests.unit.controller.test_kubernetes_pods import _attach

pytestmark = pytest.mark.usefixtures("sqlite_only")


class Server(BaseHTTPRequestHandler):
    """The inference server as the proxy reaches it: its health route and /score, with its deployment's key only."""
    key = ""

    def log_message(self, *args):
        pass

    def _answer(self, code: int, body: bytes) -> None:
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):  # noqa: N802
        self._answer(200 if self.headers.get(model_server.KEY_HEADER) == self.key else 403, b"{}")

    def do_POST(self):  # noqa: N802
        sent = self.rfile.read(int(self.headers["Content-Length"]))
        self._answer(200, json.dumps({"path": self.path, "sent": sent.decode()}).encode())


@pytest.fixture
def pod_ip():
    """A loopback address of its own on the inference server's port, standing in for the pod's IP."""
    ip = f"127.{random.randint(1, 250)}.{random.randint(1, 250)}.{random.randint(2, 250)}"
    server = ThreadingHTTPServer((ip, model_server.PORT), Server)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield ip
    server.shutdown()
    server.server_close()


@pytest.fixture
def reconciler(settings, store, fake, clock, act, broker):
    pki.ensure_ca(settings.ca_dir)  # the api makes it as it starts: the pod's fetch checks the api by it
    made = EndpointReconciler(settings, store, fake, clock, lambda env, progress: Prepared(image=IMAGE), act,
                              broker=broker)
    yield made
    made.close()


def _deploy_on_kubernetes(azure) -> str:
    _attach(azure)
    return deploy(azure, compute="k8s")


def _tick(reconciler, azure) -> None:
    reconciler.tick(azure.containers("model-server"))
    for build in list(reconciler.builds.values()):
        build.result(timeout=5)


def _running(api, name: str, ip: str) -> None:
    api.statuses[name] = {"phase": "Running", "podIP": ip, "podIPs": [{"ip": ip}], "containerStatuses": [
        {"name": SERVER, "state": {"running": {"startedAt": "2026-11-29T00:00:00Z"}}, "ready": True,
         "restartCount": 0, "image": IMAGE, "imageID": ""}], "initContainerStatuses": [
        {"name": FETCH, "state": {"terminated": {"exitCode": 0, "reason": "Completed"}}, "ready": False,
         "restartCount": 0, "image": "amlemu/emulator:latest", "imageID": ""}]}


def test_a_kubernetes_deployment_runs_pods_probed_and_scored_through_the_api_server(
        azure, reconciler, api, pod_ip, broker, clock, store, settings, fake):
    key = _deploy_on_kubernetes(azure)
    _tick(reconciler, azure)  # the serving image is asked for
    _tick(reconciler, azure)  # a pod is made
    assert azure.containers("model-server") == []  # nothing on the local runtime
    ((namespace, name), sent), = api.posted().items()
    assert namespace == "ml" and sent["metadata"]["annotations"]["amlemu.deployment-id"] == key
    (server,) = sent["spec"]["containers"]
    assert server["image"] == IMAGE and server["resources"]["limits"] == {"cpu": "1500m", "memory": str(2**30)}
    assert sent["spec"]["nodeSelector"] == {"pool": "cpu"} and sent["spec"]["initContainers"][0]["name"] == FETCH
    assert {m["mountPath"] for m in server["volumeMounts"]} == {"/var/azureml-app/src",
                                                               "/var/azureml-app/azureml-models/m/1/model"}
    rank = json.loads(next(e["value"] for e in sent["spec"]["initContainers"][0]["env"]
                           if e["name"] == rank_files.POD_ATTEMPT).replace("$$", "$"))
    assert rank_files.claimed_by(broker, key, rank["attempt"], rank["rank"]) == name  # its files, to it alone
    assert protocol.is_current(broker, key, rank["attempt"])
    scope = rank_files.recorded(broker, key, rank["attempt"], rank["rank"])
    assert len(scope.reads) == 2 and scope.writes == ()

    Server.key = model_server.server_key(reconciler.secret, key)
    _running(api, name, pod_ip)
    _tick(reconciler, azure)
    clock.advance(1)
    _tick(reconciler, azure)
    with store.reading() as repo:
        row = repo.online_deployment(key)
        assert row.provisioning_state == "Succeeded", row.error
        assert row.instances[0]["address"] == f"ml/{name}" and row.instances[0]["cluster"] == AKS
    probes = [path for method, path, _ in api.requests if method == "GET" and "/proxy/" in path]
    assert probes and probes[0].startswith(f"/api/v1/namespaces/ml/pods/{name}")

    routes = table.load(store, reconciler.secret)[EP.lower()].deployments["blue"]
    answer = asyncio.run(pod_hops.Hops(settings.data_dir).request(
        routes.addresses[0], "POST", "score", [(b"content-type", b"application/json")], b'{"data": [1]}', 5.0,
        routes.cluster))
    assert answer.status == 200 and json.loads(answer.body) == {"path": "/score", "sent": '{"data": [1]}'}

    with store.transaction() as repo:
        endpoints.delete_deployment(repo, azure.ref, EP, "blue", clock())
    _tick(reconciler, azure)
    assert api.posted() == {}
    _tick(reconciler, azure)
    with store.reading() as repo:
        assert repo.online_deployment(key) is None


def _ended(api, name: str, code: int) -> None:
    api.statuses[name] = {"phase": "Failed", "containerStatuses": [
        {"name": SERVER, "state": {"terminated": {"exitCode": code, "reason": "Error"}}, "ready": False,
         "restartCount": 0, "image": IMAGE, "imageID": ""}]}


def test_a_pod_whose_init_fails_fails_the_deployment_with_its_log_read_through_the_api_server(
        azure, reconciler, api, store):
    key = _deploy_on_kubernetes(azure)
    _tick(reconciler, azure)
    _tick(reconciler, azure)
    ((_namespace, name), _sent), = api.posted().items()
    _ended(api, name, 1)
    api.container_logs[name, SERVER] = "Traceback (most recent call last):\nValueError: no weights in the model\n"
    _tick(reconciler, azure)
    with store.reading() as repo:
        row = repo.online_deployment(key)
    assert row.provisioning_state == "Failed" and row.error["code"] == "ResourceNotReady"
    assert "exited with code 1" in row.error["message"] and "no weights in the model" in row.error["message"]
    assert api.posted() == {}  # the failed generation's pod is deleted
    with store.reading() as repo:
        logs = endpoints.logs(azure.settings, row, repo.online_endpoint(row.endpoint_key), {})
    assert "no weights in the model" in logs["content"]  # get_logs, from the pod's log


def test_a_cluster_that_does_not_answer_leaves_its_deployments_as_they_are(azure, reconciler, api, pod_ip, clock,
                                                                           store):
    key = _deploy_on_kubernetes(azure)
    _tick(reconciler, azure)
    _tick(reconciler, azure)
    ((_namespace, name), _sent), = api.posted().items()
    Server.key = model_server.server_key(reconciler.secret, key)
    _running(api, name, pod_ip)
    _tick(reconciler, azure)
    with store.reading() as repo:
        before = repo.online_deployment(key).instances
    assert before[0]["ready"]
    api.close()  # the API server goes away: its pods are not known gone, so none is replaced nor swept
    clock.advance(5)
    _tick(reconciler, azure)
    with store.reading() as repo:
        row = repo.online_deployment(key)
    assert row.instances == before and row.provisioning_state == "Succeeded"
