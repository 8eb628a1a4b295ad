"""A stand-in for a Kubernetes API server, on 127.0.0.1, for the tests of Kubernetes compute with a kubeconfig: no
real API server can run on these machines (README, "Kubernetes compute"). It answers the few core/v1 calls the
emulator makes with the shapes a real one returns and records every request, so a test asserts what was asked:
a namespace read; a pod's create, read, log and delete; the namespace's pods a label selector matches (equality and
existence requirements); and HTTP to a pod through the API server's pod proxy (tests/kube_proxy.py).

The answers were not recorded from a live cluster here: they are written from the Kubernetes API reference
(kubernetes.io/docs/reference/kubernetes-api: "Pod", "Namespace", "Status"; the `Status` failure body of a 404, a
409 AlreadyExists; "Labels and Selectors" for `labelSelector`) and the `kubernetes` Python client's documented models
(V1Pod, V1PodList, V1PodStatus, V1ContainerStatus, V1ContainerStateTerminated), which the client deserialises them
into. A list's items carry no kind nor apiVersion, as a real server's do not (the list's own say them).

A pod posted here stays Pending unless a test sets its phase (`phases`) or a stand-in kubelet (tests/kubelet.py) runs
it and reports its full status (`statuses`, with the pod's IP the proxy dials) and its containers' logs
(`container_logs`); the kubelet writes while the server reads, under `lock`, which a proxied request does not hold
while it waits for the pod.
"""

import json
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, unquote, urlsplit

from tests import kube_proxy

POD = re.compile(r"^/api/v1/namespaces/([^/]+)/pods(?:/([^/]+))?(/log)?$")
NAMESPACE = re.compile(r"^/api/v1/namespaces/([^/]+)$")
CREATED = "2026-11-28T00:00:00Z"
REQUIREMENT = re.compile(r"^\s*(!?)\s*([\w./-]+)\s*(?:(==|=|!=)\s*([\w.-]*))?\s*$")  # `k=v` `k==v` `k!=v` `k` `!k`


def status_body(code: int, reason: str | None, message: str, name: str | None = None,
                kind: str | None = None) -> dict:
    """A `Status` failure, as the API server sends with a 4xx or a 5xx; details name what was not found (a
    BadRequest's has none; the pod proxy's 500 has no reason either, as recorded: tests/kube_recordings)."""
    body = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "message": message,
            **({"reason": reason} if reason else {}), "code": code}
    if name is not None or kind is not None:
        body["details"] = {key: value for key, value in (("name", name), ("kind", kind)) if value}
    return body


def requirements(selector: str) -> list[tuple[str, str, str | None, str | None]] | str:
    """A label selector's requirements, comma-separated (all must hold), or the one this stand-in cannot parse."""
    found = [(requirement, REQUIREMENT.match(requirement)) for requirement in filter(str.strip, selector.split(","))]
    bad = [requirement for requirement, match in found if match is None]
    return bad[0].strip() if bad else [match.groups() for _requirement, match in found]


def selected(labels: dict[str, str], required: list[tuple[str, str, str | None, str | None]]) -> bool:
    """Whether all requirements hold: `k` that the label is there, `!k` that it is not, `k!=v` also where it is not."""
    for negated, key, operator, value in required:
        if operator is None:
            if (key in labels) == bool(negated):
                return False
        elif (labels.get(key) == value) == (operator == "!="):
            return False
    return True


def no_namespace(name: str) -> dict:
    return status_body(404, "NotFound", f'namespaces "{name}" not found', name, "namespaces")


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


class Handler(BaseHTTPRequestHandler):
    """The API server's HTTP: the calls `api` answers under its lock, and the pod proxy."""
    api: "FakeKubeApi"  # set on a subclass per server

    def log_message(self, *args):  # quiet
        pass

    def _answer(self, code: int, body: dict | str | bytes, pods: list[tuple[str, str]] | None = None) -> None:
        """The api's own answer, or a pod's (`pods`: its headers, as they came)."""
        data = body if isinstance(body, bytes) else body.encode() if isinstance(body, str) else \
            json.dumps(body).encode()
        if pods is None:
            self.send_response(code)
            self.send_header("Content-Type", "text/plain" if isinstance(body, str) else "application/json")
        else:
            self.send_response_only(code)
            for key, value in pods:
                self.send_header(key, value)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _handle(self, method: str) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        url = urlsplit(self.path)
        path = unquote(url.path)  # as a Go server reads it: the client's `pod%3A5001` is `pod:5001`
        if proxied := kube_proxy.PROXY.match(url.path):  # its raw bytes to the pod, whatever they are
            self._proxy(method, path, proxied, url.query, raw)
            return
        body = json.loads(raw) if raw else None
        query = {key: values[0] for key, values in parse_qs(url.query).items()}
        with self.api.lock:
            self.api.requests.append((method, path, body))
            code, answer = self.api.answer(method, path, body, query)
        self._answer(code, answer() if callable(answer) else answer)  # a running container's, unlocked

    def _proxy(self, method: str, path: str, proxied: re.Match, query: str, raw: bytes) -> None:
        """The pod's answer as it gave it; the api's Status when it has no such pod, nor an address, or
        the pod does not answer. The rest of the path goes as the client escaped it."""
        namespace, id_, rest = unquote(proxied[1]), unquote(proxied[2]), proxied[3] or "/"
        with self.api.lock:
            self.api.requests.append((method, path, raw.decode(errors="replace") if raw else None))
            to = self.api.proxy_target(namespace, id_)
        if isinstance(to, dict):
            self._answer(to["code"], to)
            return
        try:
            code, headers, body = kube_proxy.forward(to, method, rest + (f"?{query}" if query else ""),
                                                     dict(self.headers.items()), raw)
        except kube_proxy.Unreachable as exc:
            self._answer(500, status_body(500, None, f"error trying to reach service: {exc}"))
            return
        self._answer(code, body, headers)

    def do_GET(self):  # noqa: N802 (BaseHTTPRequestHandler's names)
        self._handle("GET")

    def do_POST(self):  # noqa: N802
        self._handle("POST")

    def do_PUT(self):  # noqa: N802 - to a pod through the proxy (a 405 elsewhere), as PATCH
        self._handle("PUT")

    def do_PATCH(self):  # noqa: N802
        self._handle("PATCH")

    def do_DELETE(self):  # noqa: N802
        self._handle("DELETE")


@dataclass
class FakeKubeApi:
    namespaces: set[str] = field(default_factory=lambda: {"default"})
    # (method, path, body): the body decoded, JSON for the api's own calls, the text sent for a proxied one
    requests: list[tuple[str, str, dict | str | None]] = field(default_factory=list)
    pods: dict[tuple[str, str], dict] = field(default_factory=dict)
    phases: dict[str, tuple[str, int | None]] = field(default_factory=dict)  # pod name -> (phase, exit code)
    logs: dict[str, str] = field(default_factory=dict)  # pod name -> its log, whatever the container asked
    statuses: dict[str, dict] = field(default_factory=dict)  # pod name -> a kubelet's PodStatus, before `phases`
    # (pod name, container name) -> its log, or what reads it at each request (a running container's)
    container_logs: dict[tuple[str, str], str | Callable[[], str]] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)
    host: str = "127.0.0.1"  # or an address of a private network of the tests' own (a stack's services reach it there)

    def __post_init__(self):
        handler = type("Handler", (Handler,), {"api": self})
        self.server = ThreadingHTTPServer((self.host, 0), handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.server.server_address[1]}"

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

    def posted(self) -> dict[tuple[str, str], dict]:
        """The pods as they were posted, by (namespace, name): what a kubelet runs."""
        with self.lock:
            return dict(self.pods)

    def report(self, namespace: str, name: str, sent: dict, status: dict | None = None,
               container: str | None = None, log: str | Callable[[], str] | None = None) -> None:
        """A kubelet's status of a pod, or a container's log, kept only while the pod it ran is still the one posted
        under that name (not deleted, nor posted again, since)."""
        with self.lock:
            if self.pods.get((namespace, name)) is not sent:
                return
            if status is not None:
                self.statuses[name] = status
            if container is not None:
                self.container_logs[name, container] = log

    def answer(self, method: str, path: str, body: dict | None,
               query: dict[str, str] | None = None) -> tuple[int, dict | str | Callable[[], str]]:
        if (match := NAMESPACE.match(path)) and method == "GET":
            name = match.group(1)
            return (200, namespace_body(name)) if name in self.namespaces else (404, no_namespace(name))
        match = POD.match(path)
        if match is None:
            return 404, status_body(404, "NotFound", "the server could not find the requested resource", "", "")
        namespace, name, log = match.groups()
        if namespace not in self.namespaces:
            return 404, no_namespace(namespace)
        if method not in ("GET", "POST", "DELETE"):  # a pod's PUT and PATCH are the real one's, not the emulator's
            return 405, status_body(405, "MethodNotAllowed",
                                    "the server does not allow this method on the requested resource")
        if method == "GET" and name is None:
            return self._list(namespace, (query or {}).get("labelSelector", ""))
        if method == "POST":
            return self._create(namespace, body)
        if (namespace, name) not in self.pods:
            return 404, status_body(404, "NotFound", f'pods "{name}" not found', name, "pods")
        if log:
            return self._log(namespace, name, (query or {}).get("container"))
        if method == "DELETE":
            return 200, self._delete(namespace, name)
        return 200, self._pod(namespace, name)

    def proxy_target(self, namespace: str, id_: str) -> kube_proxy.Target | dict:
        """Where the pod proxy sends a request for `id_` (`[scheme:]name[:port]`), or the API server's Status."""
        if namespace not in self.namespaces:
            return no_namespace(namespace)
        if (split := kube_proxy.split_id(id_)) is None:
            return status_body(400, "BadRequest", f'invalid pod request "{id_}"')
        scheme, name, port = split
        if (namespace, name) not in self.pods:
            return status_body(404, "NotFound", f'pods "{name}" not found', name, "pods")
        to = kube_proxy.target(self._pod(namespace, name), scheme, port)
        return to or status_body(400, "BadRequest", "address not allowed")

    def _create(self, namespace: str, body: dict) -> tuple[int, dict]:
        name = body["metadata"]["name"]
        if (namespace, name) in self.pods:
            return 409, status_body(409, "AlreadyExists", f'pods "{name}" already exists', name, "pods")
        self.pods[namespace, name] = body
        return 201, self._pod(namespace, name)

    def _list(self, namespace: str, selector: str) -> tuple[int, dict]:
        """A PodList of the namespace's pods whose labels the selector matches; a 400 for a set-based selector
        (`k in (a,b)`: valid, but not the emulator's), or one that is no selector."""
        required = requirements(selector)
        if isinstance(required, str):
            return 400, status_body(400, "BadRequest", f"unable to parse requirement: {required!r} (the stand-in "
                                    "parses `k=v`, `k==v`, `k!=v`, `k` and `!k`)")
        items = [self._pod(ns, name) for ns, name in self.pods if ns == namespace]
        items = [{k: v for k, v in pod.items() if k not in ("kind", "apiVersion")} for pod in items
                 if selected(pod["metadata"].get("labels") or {}, required)]
        return 200, {"kind": "PodList", "apiVersion": "v1", "metadata": {"resourceVersion": "2"}, "items": items}

    def _delete(self, namespace: str, name: str) -> dict:
        """The pod as it was, gone at once (no grace period), with what its kubelet reported."""
        pod = self._pod(namespace, name)
        del self.pods[namespace, name]
        self.statuses.pop(name, None)
        for key in [key for key in self.container_logs if key[0] == name]:
            del self.container_logs[key]
        return pod

    def _log(self, namespace: str, name: str, container: str | None) -> tuple[int, str | dict | Callable[[], str]]:
        """As the API server chooses: the one container of a single-container pod unless named; a 400 for a name
        the pod lacks, or none named where there are several (the default-container annotation is kubectl's)."""
        spec = self.pods[namespace, name]["spec"]
        names = [c["name"] for c in spec["containers"]]
        if container is None and len(names) > 1:
            return 400, status_body(400, "BadRequest", f"a container name must be specified for pod {name}, choose "
                                    f"one of: [{' '.join(names)}]", name, "pods")
        container = container or names[0]
        if container not in names + [c["name"] for c in spec.get("initContainers", [])]:
            return 400, status_body(400, "BadRequest", f"container {container} is not valid for pod {name}", name,
                                    "pods")
        return 200, self.container_logs.get((name, container), self.logs.get(name, ""))

    def _pod(self, namespace: str, name: str) -> dict:
        sent = self.pods[namespace, name]
        phase, code = self.phases.get(name, ("Pending", None))
        status = self.statuses.get(name) or pod_status(phase, code)
        metadata = {**sent["metadata"], "namespace": namespace, "uid": f"uid-{name}", "resourceVersion": "2",
                    "creationTimestamp": CREATED}
        return {"kind": "Pod", "apiVersion": "v1", "metadata": metadata, "spec": sent["spec"],
                "status": status}
