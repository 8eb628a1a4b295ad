"""The Kubernetes path against a real API server's answers: kube-apiserver v1.20.2, built from the Kubernetes source
Debian ships, on Debian's etcd, answering the calls the emulator makes (tests/kube_recordings/, recorded by
tests/kube_record.py: `make kube-recordings`). A server here replays each answer as it was (status, content type,
body) to the official client the emulator uses (runtime/kube.py), which must read it as the emulator means to; and
the stand-in API server the other tests use (tests/kube_api.py) must answer the same requests the way the real one
did."""

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, unquote, urlsplit

import pytest

from emulator.controller.specs import pods
from emulator.runtime import kube
from emulator.scoring import pod_hops
from tests.kube_api import FakeKubeApi

FOLDER = Path(__file__).resolve().parents[1] / "kube_recordings"
RECORDED = {path.stem: json.loads(path.read_text()) for path in sorted(FOLDER.glob("*.json"))}
POD = RECORDED["pod-create"]["request"]["body"]
NAME, NAMESPACE = POD["metadata"]["name"], POD["metadata"]["namespace"]


class Replay:
    """Answers every request with the recording the test names, and keeps what was asked."""

    def __init__(self):
        self.playing, self.asked = None, []
        replay = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def _play(self):
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                url = urlsplit(self.path)
                replay.asked.append((self.command, unquote(url.path), {k: v[0] for k, v in parse_qs(url.query).items()}))
                record = RECORDED[replay.playing]
                body = record["body"] if isinstance(record["body"], str) else json.dumps(record["body"])
                self.send_response(record["status"])
                if record["content_type"]:
                    self.send_header("Content-Type", record["content_type"])
                self.send_header("Content-Length", str(len(body.encode())))
                self.end_headers()
                self.wfile.write(body.encode())

            do_GET = do_POST = do_DELETE = do_PATCH = _play  # noqa: N815

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def play(self, name: str) -> dict:
        """The next answers are this recording's; the request it answered, as the official client sent it."""
        self.playing, self.asked = name, []
        return RECORDED[name]["request"]

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def replay(tmp_path):
    server = Replay()
    config = tmp_path / "kubeconfig"
    config.write_text(json.dumps({
        "apiVersion": "v1", "kind": "Config", "current-context": "c",
        "clusters": [{"name": "c", "cluster": {"server": f"http://127.0.0.1:{server.server.server_address[1]}"}}],
        "users": [{"name": "u", "user": {"token": "t"}}], "contexts": [{"name": "c", "context": {"cluster": "c",
                                                                                                "user": "u"}}]}))
    server.cluster = kube.Cluster(config)
    yield server
    server.close()


def _asked_as_recorded(replay: Replay, request: dict) -> None:
    """The client asked what the recorder asked of the real server (method, path, query)."""
    assert replay.asked and replay.asked[-1] == (request["method"], request["path"], request["query"]), replay.asked


def test_the_recordings_are_a_real_servers():
    assert RECORDED["version"]["body"]["gitVersion"] == "v1.20.2"
    assert len(RECORDED) >= 20


def test_the_emulators_calls_read_a_real_servers_answers(replay):
    cluster = replay.cluster
    request = replay.play("namespace-read")
    assert cluster.namespace_exists(NAMESPACE)
    _asked_as_recorded(replay, request)
    replay.play("namespace-missing")
    assert cluster.namespace_exists("nowhere") is False
    request = replay.play("pod-create")
    cluster.create_pod(NAMESPACE, POD)
    _asked_as_recorded(replay, request)
    replay.play("pod-create-again")
    cluster.create_pod(NAMESPACE, POD)  # an earlier pass's pod: left as it is
    replay.play("pod-create-missing-namespace")
    with pytest.raises(kube.Unreachable, match="404"):
        cluster.create_pod("nowhere", POD)

    request = replay.play("pod-read-pending")
    assert cluster.pod_state(NAMESPACE, NAME) == kube.PodState("Pending")  # no node yet: nothing holds it up
    _asked_as_recorded(replay, request)
    replay.play("pod-read-running")
    state = cluster.pod_state(NAMESPACE, NAME)
    assert (state.phase, state.ip, set(state.running)) == ("Running", "172.17.0.1", {pods.JOB, pods.FOLLOW})
    assert state.ended == {pods.FETCH: kube.Ended(0, "Completed")}
    replay.play("pod-read-succeeded")
    state = cluster.pod_state(NAMESPACE, NAME)
    assert state.phase == "Succeeded" and state.ended[pods.JOB] == kube.Ended(0, "Completed")
    replay.play("pod-read-missing")
    assert cluster.pod_state(NAMESPACE, NAME).phase == "Gone"

    request = replay.play("pod-list-selected")
    (listed,) = cluster.pods(NAMESPACE, request["query"]["labelSelector"])
    _asked_as_recorded(replay, request)
    assert (listed.name, listed.labels["amlemu.attempt"], listed.deleting) == (NAME, "1", False)
    replay.play("pod-list-none")
    assert cluster.pods(NAMESPACE, "amlemu.role=nothing") == []

    request = replay.play("pod-log-pending")
    assert cluster.pod_log(NAMESPACE, NAME, pods.JOB) == ""  # a pod on no node: 204, no log yet
    _asked_as_recorded(replay, request)
    replay.play("pod-log-missing")
    assert cluster.pod_log(NAMESPACE, NAME, pods.JOB) == ""
    request = replay.play("pod-delete")
    cluster.delete_pod(NAMESPACE, NAME)
    _asked_as_recorded(replay, request)
    replay.play("pod-delete-missing")
    cluster.delete_pod(NAMESPACE, NAME)  # gone already: nothing to do


def test_the_pod_proxy_answers_as_a_real_server_gives_them(replay):
    request = replay.play("pod-proxy-post")
    answer = replay.cluster.proxy(NAMESPACE, NAME, int(request["path"].split(":")[-1].split("/")[0]), "POST",
                                  "/score", {"x-amlemu-server-key": "k"}, b'{"data": [1, 2]}')
    assert (answer.status, json.loads(answer.body)["sent"]) == (200, '{"data": [1, 2]}')
    assert replay.asked[-1][:2] == ("POST", request["path"])
    assert not pod_hops._refused(answer)
    for name in ("pod-proxy-refused", "pod-proxy-pending"):  # nothing listens there; the pod has no address yet
        replay.play(name)
        answer = replay.cluster.proxy(NAMESPACE, NAME, 5001, "GET", "/", {})
        assert pod_hops._refused(answer), (name, answer)


@pytest.mark.parametrize("name", ["namespace-read", "namespace-missing", "pod-create", "pod-create-again",
                                  "pod-create-missing-namespace", "pod-read-pending", "pod-list-selected",
                                  "pod-list-none", "pod-proxy-pending", "pod-read-missing", "pod-delete-missing"])
def test_the_stand_in_answers_as_the_real_server_did(name):
    """The stand-in, holding what the real server held when it answered (namespace `ml`, the pod once created),
    gives the same status, Status reason and message, and the same kind of body."""
    recorded, stand_in = RECORDED[name], FakeKubeApi(namespaces={"default", NAMESPACE})
    try:
        if name not in ("namespace-read", "namespace-missing", "pod-create", "pod-create-missing-namespace",
                        "pod-read-missing", "pod-delete-missing"):
            stand_in.pods[NAMESPACE, NAME] = POD
        request = recorded["request"]
        path = request["path"]
        if name == "pod-proxy-pending":
            body = stand_in.proxy_target(NAMESPACE, path.split("/pods/")[1].split("/proxy")[0])
            code = body["code"]
        else:
            code, body = stand_in.answer(request["method"], path, request["body"], request["query"])
    finally:
        stand_in.close()
    real = recorded["body"]
    assert code == recorded["status"], (name, body)
    assert body.get("kind") == real.get("kind")
    if real.get("kind") == "Status":
        assert (body.get("reason"), body["message"], body.get("details")) == \
            (real.get("reason"), real["message"], real.get("details"))
    if real.get("kind") == "PodList":
        assert [i["metadata"]["name"] for i in body["items"]] == [i["metadata"]["name"] for i in real["items"]]
