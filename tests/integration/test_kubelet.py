"""The stand-in kubelet (tests/kubelet.py) on the real engine, driven through the official `kubernetes` client as the
emulator drives a cluster: an init container fills an emptyDir that the main container reads through a subPath
while a sidecar waits for it, their logs read back by container name, while running and after; a failing init
container fails the pod before the main one exists; a failing main container fails it with its exit code; a deleted
pod's containers go; limits reach Docker (and the cgroup, and the OOM killer); a pod past its deadline is killed; a
label selector lists the pods it matches; a running pod has its first main container's IP, where the API server's
pod proxy reaches it, and a Status where it cannot."""

import json
import uuid
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from kubernetes import client, config
from kubernetes.client.exceptions import ApiException

from emulator.runtime.images import BASE_IMAGE
from tests.cleanup import engine_with
from tests.kube_api import FakeKubeApi
from tests.kubelet import StandInKubelet
from tests.waiting import wait_until

pytestmark = pytest.mark.docker
NS = "ml"


@dataclass
class Cluster:
    api: FakeKubeApi
    core: client.CoreV1Api
    engine: object  # the docker client the test inspects with
    label: str  # `key=value`, on every container the kubelet made

    def containers(self, name: str, container: str | None = None) -> list:
        labels = [self.label, f"io.kubernetes.pod.name={name}"]
        labels += [f"io.kubernetes.container.name={container}"] if container else []
        return self.engine.containers.list(all=True, filters={"label": labels})

    def wait_for(self, name: str, *phases: str, timeout: float = 60) -> client.V1Pod:
        def check():
            pod = self.core.read_namespaced_pod(name, NS)
            return pod if pod.status.phase in phases else None
        return wait_until(check, timeout=timeout, message=f"pod {name} in phase {' or '.join(phases)}")

    def log(self, name: str, container: str) -> str:
        return self.core.read_namespaced_pod_log(name, NS, container=container)


@pytest.fixture
def cluster(tmp_path) -> Iterator[Cluster]:
    engine = engine_with(BASE_IMAGE, "a pod's container", "")
    label = {"amlemu.test": uuid.uuid4().hex[:10]}
    api = FakeKubeApi(namespaces={"default", NS})
    kubelet = StandInKubelet(api, label=label)
    kubelet.start()
    core = client.CoreV1Api(config.new_client_from_config(str(api.write_kubeconfig(tmp_path / "kubeconfig"))))
    made = Cluster(api, core, engine, "amlemu.test=" + label["amlemu.test"])
    try:
        yield made
    finally:
        kubelet.close()
        api.close()
        assert not engine.containers.list(all=True, filters={"label": made.label})  # nothing left behind
        engine.close()


def container(name: str, script: str, **more) -> dict:
    return {"name": name, "image": BASE_IMAGE, "command": ["/bin/sh", "-c"], "args": [script], **more}


def pod(name: str, containers: list[dict], init: list[dict] | None = None, **spec) -> dict:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": NS},
            "spec": {"restartPolicy": "Never", "containers": containers, "initContainers": init or [], **spec}}


def terminated(statuses, name: str):
    (status,) = [s for s in statuses if s.name == name]
    return status.state.terminated


def test_init_main_and_sidecar_share_an_empty_dir_and_their_logs_read_back(cluster, tmp_path):
    control = tmp_path / "control"  # a hostPath the test opens the main container's gate through
    control.mkdir(mode=0o777)
    control.chmod(0o777)
    fetch = container("fetch", "mkdir /work/inputs && echo fetched by init > /work/inputs/msg.txt",
                      volumeMounts=[{"name": "work", "mountPath": "/work"}])
    job = container("job", "cat /inputs/msg.txt; echo uid $(id -u) in $(pwd); echo $(GREETING) >&2; "
                           "until [ -e /control/go ]; do sleep 0.1; done; touch /signals/done",
                    env=[{"name": "GREETING", "value": "hello"}], workingDir="/tmp",
                    securityContext={"runAsUser": 1000, "runAsGroup": 1000},
                    volumeMounts=[{"name": "work", "mountPath": "/inputs", "subPath": "inputs", "readOnly": True},
                                  {"name": "work", "mountPath": "/signals", "subPath": "signals"},
                                  {"name": "control", "mountPath": "/control"}])
    sidecar = container("sidecar", "until [ -e /signals/done ]; do sleep 0.1; done; echo sidecar saw done",
                        volumeMounts=[{"name": "work", "mountPath": "/signals", "subPath": "signals"}])
    cluster.core.create_namespaced_pod(NS, pod("p1", [job, sidecar], [fetch], volumes=[
        {"name": "work", "emptyDir": {}}, {"name": "control", "hostPath": {"path": str(control)}}]))

    running = cluster.wait_for("p1", "Running")
    assert {s.name: bool(s.state.running) for s in running.status.container_statuses} == {"job": True,
                                                                                         "sidecar": True}
    # The main container's log while it runs: what it printed before its gate, stderr with stdout (the engine reads
    # the two streams apart: their lines' order between them is not kept).
    printed = ["fetched by init", "hello", "uid 1000 in /tmp"]
    wait_until(lambda: sorted(cluster.log("p1", "job").splitlines()) == printed, timeout=30,
               message=f"the job's log while it runs to be {printed}")
    assert cluster.core.read_namespaced_pod("p1", NS).status.phase == "Running"  # still at its gate
    with pytest.raises(ApiException) as caught:  # two containers: the API server wants one named
        cluster.core.read_namespaced_pod_log("p1", NS)
    assert caught.value.status == 400
    (control / "go").touch()

    done = cluster.wait_for("p1", "Succeeded", "Failed")
    assert done.status.phase == "Succeeded"
    init = terminated(done.status.init_container_statuses, "fetch")
    assert (init.exit_code, init.reason) == (0, "Completed") and init.container_id.startswith("docker://")
    assert [terminated(done.status.container_statuses, c).reason for c in ("job", "sidecar")] == ["Completed"] * 2
    assert {c.type: c.status for c in done.status.conditions} == {
        "PodScheduled": "True", "Initialized": "True", "ContainersReady": "False", "Ready": "False"}
    assert cluster.log("p1", "sidecar") == "sidecar saw done\n"
    assert "fetched by init" in cluster.log("p1", "job")


def test_a_failing_init_container_fails_the_pod_before_the_main_one_exists(cluster):
    cluster.core.create_namespaced_pod(NS, pod("p2", [container("job", "echo never")],
                                               [container("fetch", "echo no such file >&2; exit 3")]))
    failed = cluster.wait_for("p2", "Failed", "Succeeded")
    assert failed.status.phase == "Failed"
    assert terminated(failed.status.init_container_statuses, "fetch").exit_code == 3
    (job,) = failed.status.container_statuses
    assert job.state.waiting.reason == "PodInitializing"
    assert cluster.log("p2", "fetch") == "no such file\n"
    assert not cluster.containers("p2", "job") and len(cluster.containers("p2", "fetch")) == 1


def test_a_failing_main_container_fails_the_pod_with_its_exit_code(cluster):
    cluster.core.create_namespaced_pod(NS, pod("p3", [container("job", "exit 5"), container("sidecar", "true")]))
    failed = cluster.wait_for("p3", "Failed", "Succeeded")
    assert failed.status.phase == "Failed"
    job = terminated(failed.status.container_statuses, "job")
    assert (job.exit_code, job.reason) == (5, "Error")
    assert terminated(failed.status.container_statuses, "sidecar").reason == "Completed"


def test_deleting_a_running_pod_removes_its_containers(cluster):
    cluster.core.create_namespaced_pod(NS, pod("p4", [container("job", "echo up; exec sleep 300")]))
    cluster.wait_for("p4", "Running")
    wait_until(lambda: cluster.core.read_namespaced_pod_log("p4", NS) == "up\n", timeout=30,
               message="the single container's log, unnamed")
    assert [c.status for c in cluster.containers("p4")] == ["running"]
    cluster.core.delete_namespaced_pod("p4", NS)
    wait_until(lambda: not cluster.containers("p4"), timeout=30, message="the deleted pod's containers to go")
    with pytest.raises(ApiException) as caught:
        cluster.core.read_namespaced_pod("p4", NS)
    assert caught.value.status == 404


def test_limits_reach_docker_the_cgroup_and_the_oom_killer(cluster):
    limits = {"cpu": "1500m", "memory": "512Mi"}
    job = container("job", "cat /sys/fs/cgroup/memory.max 2>/dev/null || "
                           "cat /sys/fs/cgroup/memory/memory.limit_in_bytes",
                    resources={"requests": limits, "limits": limits})
    hog = container("hog", "head -c 200m /dev/zero | tail > /dev/null",  # tail keeps the one endless line
                    resources={"limits": {"cpu": "1", "memory": "32Mi"}})
    cluster.core.create_namespaced_pod(NS, pod("p5", [job, hog]))
    failed = cluster.wait_for("p5", "Failed", "Succeeded")
    assert cluster.log("p5", "job").strip() == str(512 * 2**20)
    (made,) = cluster.containers("p5", "job")
    host = made.attrs["HostConfig"]
    assert (host["NanoCpus"], host["Memory"], host["MemorySwap"]) == (1_500_000_000, 512 * 2**20, 512 * 2**20)
    hogged = terminated(failed.status.container_statuses, "hog")
    assert (failed.status.phase, hogged.reason, hogged.exit_code) == ("Failed", "OOMKilled", 137)
    assert failed.status.qos_class == "Guaranteed"  # the hog's requests are its limits, as none are given


def test_a_pod_past_its_deadline_is_killed_and_failed(cluster):
    cluster.core.create_namespaced_pod(NS, pod("p6", [container("job", "exec sleep 300")],
                                               activeDeadlineSeconds=2))
    failed = cluster.wait_for("p6", "Failed", "Succeeded", timeout=30)
    assert (failed.status.phase, failed.status.reason) == ("Failed", "DeadlineExceeded")
    assert terminated(failed.status.container_statuses, "job").exit_code == 137


def test_a_label_selector_lists_the_pods_it_matches(tmp_path):
    api = FakeKubeApi(namespaces={"default", NS})  # no kubelet: the pods stay Pending
    try:
        core = client.CoreV1Api(config.new_client_from_config(str(api.write_kubeconfig(tmp_path / "kubeconfig"))))
        for name, labels in {"a": {"app": "m", "tier": "web"}, "b": {"app": "m", "tier": "db"}, "c": {"app": "x"},
                             "d": {}}.items():
            sent = pod(name, [container("job", "true")])
            sent["metadata"]["labels"] = labels
            core.create_namespaced_pod(NS, sent)

        def names(selector: str) -> list[str]:
            return sorted(p.metadata.name for p in core.list_namespaced_pod(NS, label_selector=selector).items)

        assert names("app=m") == ["a", "b"] and names("app==m,tier!=db") == ["a"]
        assert names("tier") == ["a", "b"] and names("!tier") == ["c", "d"] and names("app!=m") == ["c", "d"]
        assert names("app=m,tier=cache") == [] and names("") == ["a", "b", "c", "d"]
        (found,) = core.list_namespaced_pod(NS, label_selector="app=x").items
        assert found.metadata.labels == {"app": "x"} and found.status.phase == "Pending"
        with pytest.raises(ApiException) as caught:
            core.list_namespaced_pod("nope", label_selector="app=m")
        assert caught.value.status == 404
    finally:
        api.close()


SERVER = """
import json
from http.server import BaseHTTPRequestHandler, HTTPServer
class Echo(BaseHTTPRequestHandler):
    def do_POST(self):
        sent = self.rfile.read(int(self.headers.get("Content-Length") or 0)).decode()
        seen = {"method": self.command, "path": self.path, "key": self.headers.get("x-amlemu-server-key"),
                "authorization": self.headers.get("Authorization"), "body": sent}
        answer = json.dumps(seen).encode()
        self.send_response(201)
        self.send_header("Content-Type", "application/json; charset=utf-8")
        self.send_header("Content-Length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)
    do_GET = do_POST
server = HTTPServer(("", 5001), Echo)
print("listening", flush=True)
server.serve_forever()
"""


def proxied(core: client.CoreV1Api, method: str, name: str, path: str = "", **more):
    """A request through the API server's pod proxy with the client's URL and credentials, its answer raw: the
    status, headers and body the pod gave, or the API server's Status (the client raises for neither)."""
    api = core.api_client
    method, url, headers, body, _post = api.param_serialize(
        method, "/api/v1/namespaces/{namespace}/pods/{name}/proxy/{path}",
        path_params={"namespace": NS, "name": name, "path": path}, auth_settings=["BearerToken"], **more)
    answer = api.call_api(method, url, header_params=headers, body=body, _request_timeout=30)
    answer.read()
    return answer


def test_a_running_pod_is_reached_through_the_api_servers_proxy_at_its_first_containers_ip(cluster):
    server = {"name": "server", "image": BASE_IMAGE, "command": ["python3", "-c", SERVER],
              "ports": [{"containerPort": 5001}]}
    cluster.core.create_namespaced_pod(NS, pod("p7", [server, container("sidecar", "exec sleep 300")]))
    running = cluster.wait_for("p7", "Running")
    wait_until(lambda: cluster.log("p7", "server") == "listening\n", timeout=30, message="the server to listen")
    (made,) = cluster.containers("p7", "server")
    ip = made.attrs["NetworkSettings"]["Networks"]["bridge"]["IPAddress"]
    assert running.status.pod_ip == ip and [i.ip for i in running.status.pod_ips] == [ip]
    assert {c.type: c.status for c in running.status.conditions}["Ready"] == "True"
    assert all(s.ready for s in running.status.container_statuses)

    answer = proxied(cluster.core, "POST", "p7:5001", "score", query_params=[("verbose", "1")],
                     header_params={"x-amlemu-server-key": "k", "Content-Type": "application/json"},
                     body={"data": [1, 2]})
    assert answer.status == 201 and answer.headers["Content-Type"] == "application/json; charset=utf-8"
    assert json.loads(answer.data) == {"method": "POST", "path": "/score?verbose=1", "key": "k",
                                       "authorization": None, "body": '{"data": [1, 2]}'}  # the api's token stays
    assert ("POST", "/api/v1/namespaces/ml/pods/p7:5001/proxy/score", '{"data": [1, 2]}') in cluster.api.requests
    plain = proxied(cluster.core, "GET", "p7")  # no port: the pod's first declared one
    assert plain.status == 201 and json.loads(plain.data)["path"] == "/"


def test_the_proxy_answers_a_status_where_it_cannot_reach_the_pod(cluster):
    cluster.core.create_namespaced_pod(NS, pod("p8", [container("job", "exec sleep 300")]))
    ip = cluster.wait_for("p8", "Running").status.pod_ip
    refused = proxied(cluster.core, "GET", "p8:5001", "score")
    assert refused.status == 500 and refused.headers["Content-Type"] == "application/json"
    assert json.loads(refused.data) == {
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": f"error trying to reach service: dial tcp {ip}:5001: connect: connection refused", "code": 500}

    cluster.core.create_namespaced_pod(NS, pod("p9", [container("job", "true", image="amlemu/absent:none")]))
    unplaced = proxied(cluster.core, "GET", "p9:5001")  # waiting for its image: no IP
    assert (unplaced.status, json.loads(unplaced.data)["message"]) == (400, "address not allowed")
    missing = proxied(cluster.core, "GET", "p0:5001")
    assert (missing.status, json.loads(missing.data)["message"]) == (404, 'pods "p0" not found')
