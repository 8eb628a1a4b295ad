"""Records a real Kubernetes API server's answers to the calls the emulator makes (tests/kube_recordings/), so that the
Kubernetes path is tested against them where no API server can run (tests/unit/test_kube_recordings.py).

The server is Kubernetes' own kube-apiserver, built from the source Debian ships (its `kubernetes` source package,
from which Debian builds only kubectl) with Debian's Go, on Debian's etcd: `make kube-recordings` builds it and runs
this. No kubelet, no scheduler and no controller-manager run: a pod stays unscheduled (Pending, no node) unless the
recorder writes its status as a kubelet does (PATCH .../pods/NAME/status), and the namespace's `default` service
account is made as the controller-manager would make it. The calls are made with httpx, as the official client
sends them (the paths, queries and bodies of runtime/kube.py's calls); each recording keeps the request and the
answer as they were.

    .venv/bin/python -m tests.kube_record --apiserver /path/to/kube-apiserver      (or: make kube-recordings)
"""

import argparse
import ipaddress
import json
import os
import socket
import subprocess
import tempfile
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import docker
import httpx
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from emulator.controller.specs import pods
from emulator.dispatch.protocol import Attempt, Mount
from emulator.domain.compute.kubernetes import InstanceType, Resources
from tests.waiting import wait_until

FOLDER = Path(__file__).with_name("kube_recordings")
TOKEN = "recorder-token"
NAMESPACE = "ml"
SMALL = InstanceType("small", {"pool": "cpu"}, Resources(cpu=0.25, memory=256 << 20), Resources(cpu=1.0, memory=768 << 20))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _keys(folder: Path) -> tuple[Path, Path]:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    private, public = folder / "sa.key", folder / "sa.pub"
    private.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL,
                                          serialization.NoEncryption()))
    public.write_bytes(key.public_key().public_bytes(serialization.Encoding.PEM,
                                                     serialization.PublicFormat.SubjectPublicKeyInfo))
    return private, public


def start(apiserver: str, folder: Path) -> tuple[list[subprocess.Popen], str]:
    """etcd and the API server on loopback ports of their own; the API server's URL."""
    etcd_port, peer_port, port = _free_port(), _free_port(), _free_port()
    etcd = subprocess.Popen(["etcd", "--data-dir", str(folder / "etcd"),
                             "--listen-client-urls", f"http://127.0.0.1:{etcd_port}",
                             "--advertise-client-urls", f"http://127.0.0.1:{etcd_port}",
                             "--listen-peer-urls", f"http://127.0.0.1:{peer_port}",
                             "--initial-advertise-peer-urls", f"http://127.0.0.1:{peer_port}",
                             "--initial-cluster", f"default=http://127.0.0.1:{peer_port}"],
                            stdout=open(folder / "etcd.log", "w"), stderr=subprocess.STDOUT)
    private, public = _keys(folder)
    (folder / "tokens.csv").write_text(f"{TOKEN},recorder,1000,system:masters\n")
    server = subprocess.Popen([apiserver, f"--etcd-servers=http://127.0.0.1:{etcd_port}",
                               "--bind-address=127.0.0.1", "--advertise-address=127.0.0.1", f"--secure-port={port}",
                               f"--cert-dir={folder / 'certs'}", f"--token-auth-file={folder / 'tokens.csv'}",
                               "--authorization-mode=RBAC", "--service-cluster-ip-range=10.96.0.0/24",
                               "--service-account-issuer=https://kubernetes.default.svc",
                               f"--service-account-key-file={public}",
                               f"--service-account-signing-key-file={private}"],
                              stdout=open(folder / "apiserver.log", "w"), stderr=subprocess.STDOUT)
    return [server, etcd], f"https://127.0.0.1:{port}"


def _ready(http: httpx.Client) -> bool:
    try:
        return http.get("/readyz").status_code == 200
    except httpx.HTTPError:
        return False


class Recorder:
    def __init__(self, http: httpx.Client, folder: Path):
        self.http, self.folder = http, folder

    def call(self, name: str, method: str, path: str, body: dict | None = None, params: dict | None = None,
             content_type: str = "application/json", headers: dict | None = None) -> httpx.Response:
        headers = {"Content-Type": content_type, "Accept": "application/json", **(headers or {})}
        answer = self.http.request(method, path, params=params, headers=headers,
                                   content=json.dumps(body) if body is not None else None)
        try:
            parsed = answer.json()
        except ValueError:
            parsed = answer.text
        record = {"request": {"method": method, "path": path, "query": params or {}, "body": body,
                              "headers": {k: v for k, v in headers.items() if k.lower() != "accept"}},
                  "status": answer.status_code, "content_type": answer.headers.get("content-type"), "body": parsed}
        (self.folder / f"{name}.json").write_text(json.dumps(record, indent=1, sort_keys=True) + "\n")
        return answer


def job_pod() -> dict:
    """A job's pod as the emulator makes it (controller/specs/pods.py), for a job of no importance."""
    attempt = Attempt(job_key="/subscriptions/s/resourcegroups/rg/providers/microsoft.machinelearningservices/"
                              "workspaces/w/jobs/recorded", job_name="recorded", attempt=1, rank=0, world_size=1,
                      image="python:3.11-slim", command="echo $HOME", env={"A": "1"}, labels={},
                      container_name="c", cpus=None, memory_bytes=None, gpus=0, network=None, user="1000:1000",
                      workdir="jobs/recorded/wd", code_dir="code/x", log_file="jobs/recorded/std_log.txt",
                      mounts=[Mount("data/in", "/mnt/in", read_only=True)])
    files = pods.PodFiles("amlemu/emulator:latest", "https://api:8443", "token", "-----BEGIN CERTIFICATE-----")
    return pods.manifest(attempt, NAMESPACE, SMALL, files, 3600)


class Echo(BaseHTTPRequestHandler):
    """The pod's server, as the API server's proxy reaches it: what it was sent, back."""

    def log_message(self, *args):
        pass

    def do_POST(self):  # noqa: N802
        sent = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        body = json.dumps({"path": self.path, "key": self.headers.get("x-amlemu-server-key"),
                           "authorization": self.headers.get("Authorization"), "sent": sent.decode()}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def pod_address() -> str:
    """An address of this machine that the API server may dial as a pod's (it refuses loopback ones): its own on
    Docker's default bridge, a private network; nothing leaves the machine."""
    config = docker.from_env().networks.get("bridge").attrs["IPAM"]["Config"][0]
    return config.get("Gateway") or str(ipaddress.ip_network(config["Subnet"])[1])


def _running(ip: str) -> dict:
    """A pod's status as a kubelet writes it once its containers run."""
    started = "2026-11-29T00:00:00Z"
    return {"status": {"phase": "Running", "podIP": ip, "podIPs": [{"ip": ip}],
                       "hostIP": ip, "startTime": started,
                       "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": started}],
                       "initContainerStatuses": [{"name": pods.FETCH, "ready": True, "restartCount": 0,
                                                  "image": "amlemu/emulator:latest", "imageID": "",
                                                  "state": {"terminated": {"exitCode": 0, "reason": "Completed",
                                                                           "startedAt": started,
                                                                           "finishedAt": started}}}],
                       "containerStatuses": [{"name": c, "ready": True, "restartCount": 0, "image": "x",
                                              "imageID": "", "started": True,
                                              "state": {"running": {"startedAt": started}}}
                                             for c in (pods.JOB, pods.FOLLOW)]}}


def _succeeded() -> dict:
    ended = "2026-11-29T00:01:00Z"
    return {"status": {"phase": "Succeeded", "containerStatuses": [
        {"name": c, "ready": False, "restartCount": 0, "image": "x", "imageID": "", "started": False,
         "state": {"terminated": {"exitCode": code, "reason": "Completed" if code == 0 else "Error",
                                  "startedAt": "2026-11-29T00:00:00Z", "finishedAt": ended}}}
        for c, code in ((pods.JOB, 0), (pods.FOLLOW, 0))]}}


def record(server: str, folder: Path) -> None:
    folder.mkdir(exist_ok=True)
    with httpx.Client(base_url=server, headers={"Authorization": f"Bearer {TOKEN}"}, verify=False,
                      timeout=30) as http:
        wait_until(lambda: _ready(http), timeout=120, interval=0.5,
                   message="the API server to get ready (see apiserver.log)")
        rec = Recorder(http, folder)
        rec.call("version", "GET", "/version")
        http.post("/api/v1/namespaces", json={"metadata": {"name": NAMESPACE}})
        # the controller-manager's doing on a real cluster: the ServiceAccount admission asks for it
        http.post(f"/api/v1/namespaces/{NAMESPACE}/serviceaccounts", json={"metadata": {"name": "default"}})
        rec.call("namespace-read", "GET", f"/api/v1/namespaces/{NAMESPACE}")
        rec.call("namespace-missing", "GET", "/api/v1/namespaces/nowhere")
        manifest = job_pod()
        name, pod = manifest["metadata"]["name"], f"/api/v1/namespaces/{NAMESPACE}/pods/{manifest['metadata']['name']}"
        rec.call("pod-create", "POST", f"/api/v1/namespaces/{NAMESPACE}/pods", manifest)
        rec.call("pod-create-again", "POST", f"/api/v1/namespaces/{NAMESPACE}/pods", manifest)
        rec.call("pod-create-missing-namespace", "POST", "/api/v1/namespaces/nowhere/pods",
                 {**manifest, "metadata": {**manifest["metadata"], "namespace": "nowhere"}})
        rec.call("pod-read-pending", "GET", pod)
        rec.call("pod-list-selected", "GET", f"/api/v1/namespaces/{NAMESPACE}/pods",
                 params={"labelSelector": f"app.kubernetes.io/managed-by={pods.MANAGED_BY}"})
        rec.call("pod-list-none", "GET", f"/api/v1/namespaces/{NAMESPACE}/pods",
                 params={"labelSelector": "amlemu.role=nothing"})
        rec.call("pod-log-pending", "GET", f"{pod}/log", params={"container": pods.JOB})
        rec.call("pod-proxy-pending", "GET", f"/api/v1/namespaces/{NAMESPACE}/pods/{name}:5001/proxy/")
        ip = pod_address()
        echo = ThreadingHTTPServer((ip, 0), Echo)
        threading.Thread(target=echo.serve_forever, daemon=True).start()
        rec.call("pod-status-running", "PATCH", f"{pod}/status", _running(ip),
                 content_type="application/merge-patch+json")
        rec.call("pod-read-running", "GET", pod)
        proxy = f"/api/v1/namespaces/{NAMESPACE}/pods/{name}"
        rec.call("pod-proxy-post", "POST", f"{proxy}:{echo.server_address[1]}/proxy/score", {"data": [1, 2]},
                 headers={"x-amlemu-server-key": "k"})
        echo.shutdown()
        echo.server_close()
        rec.call("pod-proxy-refused", "GET", f"{proxy}:{echo.server_address[1]}/proxy/")
        rec.call("pod-status-succeeded", "PATCH", f"{pod}/status", _succeeded(),
                 content_type="application/merge-patch+json")
        rec.call("pod-read-succeeded", "GET", pod)
        rec.call("pod-delete", "DELETE", pod)
        rec.call("pod-read-missing", "GET", pod)
        rec.call("pod-delete-missing", "DELETE", pod)
        rec.call("pod-log-missing", "GET", f"{pod}/log", params={"container": pods.JOB})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--apiserver", required=True, help="a kube-apiserver binary")
    parser.add_argument("--out", type=Path, default=FOLDER)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        processes, server = start(args.apiserver, Path(scratch))
        try:
            record(server, args.out)
        finally:
            for process in processes:
                process.terminate()
                process.wait(30)
            if os.environ.get("AMLEMU_KEEP_LOGS"):
                for log in ("apiserver.log", "etcd.log"):
                    print(Path(scratch, log).read_text()[-4000:])
    print(f"recorded {len(list(args.out.glob('*.json')))} answers in {args.out}")


if __name__ == "__main__":
    main()
