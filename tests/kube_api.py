"""A stand-in for a Kubernetes API server, on 127.0.0.1, for the tests of Kubernetes compute with a kubeconfig: no
real API server can run on these machines (README, "Kubernetes compute"). It answers the few core/v1 calls the
emulator makes with the shapes a real one returns and records every request, so a test asserts what was asked.

The answers were not recorded from a live cluster here: they are written from the Kubernetes API reference
(kubernetes.io/docs/reference/kubernetes-api: "Pod", "Namespace", "Status"; the `Status` failure body of a 404, a
409 AlreadyExists) and the `kubernetes` Python client's documented models (V1Pod, V1PodStatus, V1ContainerStatus,
V1ContainerStateTerminated), which the client deserialises them into.
"""

import json
import re
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

POD = re.compile(r"^/api/v1/namespaces/([^/]+)/pods(?:/([^/]+))?(/log)?$")
NAMESPACE = re.compile(r"^/api/v1/namespaces/([^/]+)$")
CREATED = "2026-11-28T00:00:00Z"


def status_body(code: int, reason: str, message: str, name: str, kind: str) -> dict:
    """A `Status` failure, as the API server sends with a 4xx."""
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "message": message,
            "reason": reason, "details": {"name": name, "kind": kind}, "code": code}


def namespace_body(name: str) -> dict:
    return {"kind": "Namespace", "apiVersion": "v1",
            "metadata": {"name": name, "uid": f"uid-{name}", "resourceVersion": "1", "creationTimestamp": CREATED,
                         "labels": {"kubernetes.io/metadata.name": name}},
            "spec": {"finalizers": ["kubernetes"]}, "status": {"phase": "Active"}}


def pod_status(phase: str, exit_code: int | None = None) -> dict:
    status = {"phase": phase, "conditions": [], "qosClass": "Burstable"}
    if phase in ("Running", "Succeeded", "Failed"):
        state = ({"running": {"startedAt": CREATED}} if exit_code is None else
                 {"terminated": {"exitCode": exit_code, "reason": "Completed" if exit_code == 0 else "Error",
                                 "startedAt": CREATED, "finishedAt": CREATED, "containerID": "containerd://c0"}})
        status.update(startTime=CREATED, containerStatuses=[{
            "name": "job", "state": state, "lastState": {}, "ready": phase == "Running", "restartCount": 0,
            "image": "docker.io/library/python:3.11-slim", "imageID": "", "containerID": "containerd://c0",
            "started": phase == "Running"}])
    return status


@dataclass
class FakeKubeApi:
    namespaces: set[str] = field(default_factory=lambda: {"default"})
    requests: list[tuple[str, str, dict | None]] = field(default_factory=list)  # (method, path, body)
    pods: dict[tuple[str, str], dict] = field(default_factory=dict)
    phases: dict[str, tuple[str, int | None]] = field(default_factory=dict)  # pod name -> (phase, exit code)
    logs: dict[str, str] = field(default_factory=dict)

    def __post_init__(self):
        api = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # quiet
                pass

            def _answer(self, code: int, body: dict | str) -> None:
                data = body.encode() if isinstance(body, str) else json.dumps(body).encode()
                self.send_response(code)
                self.send_header("Content-Type", "text/plain" if isinstance(body, str) else "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _handle(self, method: str) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length)) if length else None
                path = self.path.split("?", 1)[0]
                api.requests.append((method, path, body))
                self._answer(*api.answer(method, path, body))

            def do_GET(self):  # noqa: N802 (BaseHTTPRequestHandler's names)
                self._handle("GET")

            def do_POST(self):  # noqa: N802
                self._handle("POST")

            def do_DELETE(self):  # noqa: N802
                self._handle("DELETE")

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def write_kubeconfig(self, path: Path) -> Path:
        """A kubeconfig as `kubectl config view --raw` prints one, pointing at this server, with a bearer token."""
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({
            "apiVersion": "v1", "kind": "Config", "current-context": "test",
            "clusters": [{"name": "test", "cluster": {"server": self.url}}],
            "users": [{"name": "tester", "user": {"token": "test-token"}}],
            "contexts": [{"name": "test", "context": {"cluster": "test", "user": "tester"}}]}))
        return path

    def answer(self, method: str, path: str, body: dict | None) -> tuple[int, dict | str]:
        if (match := NAMESPACE.match(path)) and method == "GET":
            name = match.group(1)
            if name in self.namespaces:
                return 200, namespace_body(name)
            return 404, status_body(404, "NotFound", f'namespaces "{name}" not found', name, "namespaces")
        match = POD.match(path)
        if match is None:
            return 404, status_body(404, "NotFound", "the server could not find the requested resource", "", "")
        namespace, name, log = match.groups()
        if namespace not in self.namespaces:
            return 404, status_body(404, "NotFound", f'namespaces "{namespace}" not found', namespace, "namespaces")
        if method == "POST":
            name = body["metadata"]["name"]
            if (namespace, name) in self.pods:
                return 409, status_body(409, "AlreadyExists", f'pods "{name}" already exists', name, "pods")
            self.pods[namespace, name] = body
            return 201, self._pod(namespace, name)
        if (namespace, name) not in self.pods:
            return 404, status_body(404, "NotFound", f'pods "{name}" not found', name, "pods")
        if log:
            return 200, self.logs.get(name, "")
        if method == "DELETE":
            pod = self._pod(namespace, name)
            del self.pods[namespace, name]
            return 200, pod
        return 200, self._pod(namespace, name)

    def _pod(self, namespace: str, name: str) -> dict:
        sent = self.pods[namespace, name]
        phase, code = self.phases.get(name, ("Pending", None))
        metadata = {**sent["metadata"], "namespace": namespace, "uid": f"uid-{name}", "resourceVersion": "2",
                    "creationTimestamp": CREATED}
        return {"kind": "Pod", "apiVersion": "v1", "metadata": metadata, "spec": sent["spec"],
                "status": pod_status(phase, code)}
