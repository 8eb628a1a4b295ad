"""Kubernetes compute with a kubeconfig, end to end through the unmodified azure-ai-ml SDK against the composed stack:
the job runs as a pod, with its code snapshot, a mounted data asset, a named output and MLflow, as on Azure; a job
cancelled while it runs has its pod deleted. A Kubernetes online deployment's model servers are pods there too,
scored through the API server's pod proxy.

No real cluster can run here (README, "Kubernetes compute"): the kubeconfig names a stand-in API server
(tests/kube_api.py) on the stack's own network, and a stand-in kubelet (tests/kubelet.py) runs the pods it is given
as Docker containers on that network, where the pods reach the api at its nodes' address (`api`), as a real
cluster's pods reach AMLEMU_NODE_API_URL. The emulator's side is all real: attach checks the namespace there, the
controller makes the pod through the official client, the pod's own containers fetch and send the job's files
over HTTPS with the pod's token, and the job follows the pod."""

import contextlib
import io
import json

import docker
import pytest
from azure.ai.ml import Input, Output, command
from azure.ai.ml.entities import (
    CodeConfiguration,
    Data,
    Environment,
    KubernetesCompute,
    KubernetesOnlineDeployment,
    KubernetesOnlineEndpoint,
    Model,
    OnlineRequestSettings,
    ProbeSettings,
)
from azure.core.exceptions import HttpResponseError

from emulator.controller.specs import pods
from emulator.services import kubernetes
from tests import mlflow_rest
from tests.kube_api import FakeKubeApi
from tests.kubelet import StandInKubelet
from tests.waiting import wait_until

pytestmark = pytest.mark.e2e
ENV = Environment(image="python:3.11-slim")
REGISTRY = {"python:3.11-slim": "amlemu/python-stand-in:3-slim"}  # what the cluster would pull for that name
TYPES = {"small": {"nodeSelector": {"pool": "cpu"},
                   "resources": {"requests": {"cpu": "250m", "memory": "256Mi"},
                                 "limits": {"cpu": "1", "memory": "768Mi"}}}}
MAIN = """import pathlib, sys
greeting = (pathlib.Path(sys.argv[1]) / "greeting.txt").read_text()
print("in the pod:", greeting, "costs $(none)")
(pathlib.Path(sys.argv[2]) / "shout.txt").write_text(greeting.upper())
""" + mlflow_rest.log_metric("answer", 42)


RID = "/subscriptions/{}/resourceGroups/{}/providers/Microsoft.ContainerService/managedClusters/aks-pods"


@pytest.fixture
def cluster(stack):
    """The stand-in API server and its kubelet, on the stack's network (the stack's services reach the server at
    the network's gateway, the pods reach the api by its name), and its kubeconfig where the user puts it."""
    gateway = docker.from_env().networks.get(stack.network).attrs["IPAM"]["Config"][0]["Gateway"]
    api = FakeKubeApi(namespaces={"default", "ml"}, host=gateway)
    kubelet = StandInKubelet(api, network=stack.network, label={"amlemu.it": "true"}, images=REGISTRY)
    kubelet.start()
    config = api.write_kubeconfig(kubernetes.kubeconfig_path(stack.home, RID.format(stack.subscription,
                                                                                    stack.resource_group)))
    yield api
    config.unlink()
    kubelet.close()
    api.close()


def _key(stack, job: str) -> str:
    return (f"/subscriptions/{stack.subscription}/resourcegroups/{stack.resource_group}/providers/"
            f"microsoft.machinelearningservices/workspaces/{stack.workspace}/jobs/{job}").lower()


def _streamed(ml_client, job: str) -> str:
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        ml_client.jobs.stream(job)
    return printed.getvalue()


def test_a_job_on_kubernetes_compute_runs_as_a_pod_with_its_files_and_mlflow(ml_client, stack, cluster, tmp_path):
    import mlflow

    rid = RID.format(stack.subscription, stack.resource_group)
    mlflow_rest.track(ml_client)
    compute = ml_client.compute.begin_create_or_update(KubernetesCompute(
        name="k8s-pods", resource_id=rid, namespace="ml", properties={"instanceTypes": TYPES})).result()
    assert compute.provisioning_state == "Succeeded" and "jobs and model servers run as pods" in compute.description
    assert ("GET", "/api/v1/namespaces/ml") in [r[:2] for r in cluster.requests]

    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "greeting.txt").write_text("hello from the workspace")
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "main.py").write_text(MAIN)
    data = ml_client.data.create_or_update(Data(name="k8s-greeting", type="uri_folder", path=str(tmp_path / "data")))
    job = ml_client.jobs.create_or_update(command(
        code=str(tmp_path / "src"), command="python main.py ${{inputs.greeting}} ${{outputs.shout}}",
        inputs={"greeting": Input(type="uri_folder", path=f"azureml:{data.name}:{data.version}")},
        outputs={"shout": Output(type="uri_folder")}, environment=ENV, compute="k8s-pods", instance_type="small"))
    log = _streamed(ml_client, job.name)  # as it runs, to its end
    status = ml_client.jobs.get(job.name).status
    assert status == "Completed", log[-4000:]
    assert "in the pod: hello from the workspace costs $(none)" in log and "logged answer" in log, log[-4000:]
    assert "amlemu: pod ml/" in log

    ((namespace, name), sent), = cluster.pods.items()
    (job_container, _follow) = sent["spec"]["containers"]
    assert namespace == "ml" and sent["spec"]["nodeSelector"] == {"pool": "cpu"}
    assert job_container["resources"]["limits"] == {"cpu": "1000m", "memory": str(768 * 2**20)}
    ml_client.jobs.download(job.name, download_path=str(tmp_path / "dl"), output_name="shout")
    assert (tmp_path / "dl" / "named-outputs" / "shout" / "shout.txt").read_text() == "HELLO FROM THE WORKSPACE"
    assert mlflow.get_run(job.name).data.metrics["answer"] == 42

    # cancelled while it runs: its pod is deleted, and with it its containers (the kubelet's doing)
    waiting = ml_client.jobs.create_or_update(command(command="echo waiting; sleep 600", environment=ENV,
                                                      compute="k8s-pods"))
    wait_until(lambda: ml_client.jobs.get(waiting.name).status == "Running", timeout=120, interval=0.5,
               message="the second job's pod to run")
    pod = {"label": f"io.kubernetes.pod.name={pods.pod_name(_key(stack, waiting.name), 1)}"}
    assert docker.from_env().containers.list(filters=pod)  # its job and follower run
    ml_client.jobs.begin_cancel(waiting.name).result()
    wait_until(lambda: ml_client.jobs.get(waiting.name).status == "Canceled", timeout=60, interval=0.5,
               message="the cancelled job to be Canceled")
    wait_until(lambda: len(cluster.posted()) == 1 and not docker.from_env().containers.list(filters=pod), timeout=60, interval=0.5, message="the cancelled job's pod and its containers to be gone")

    ml_client.compute.begin_delete("k8s-pods", action="Detach").result()
    wait_until(lambda: "k8s-pods" not in [c.name for c in ml_client.compute.list()], timeout=60, interval=1,
               message="the compute to be detached")


SCORE = """
import json, os

def init():
    global weight
    with open(os.path.join(os.environ["AZUREML_MODEL_DIR"], "model", "weight.txt")) as f:
        weight = int(f.read())
    print("init: weight", weight, "costs $(none)", flush=True)

def run(raw_data):
    return {"result": [x * weight for x in json.loads(raw_data)["data"]], "pod": os.environ["HOSTNAME"]}
"""
FAST = ProbeSettings(initial_delay=1, period=1, timeout=5, success_threshold=1, failure_threshold=60)


def _serving(cluster) -> list[tuple[str, dict]]:
    return [(name, sent) for (_ns, name), sent in cluster.posted().items()
            if sent["metadata"]["labels"].get("amlemu.role") == "model-server"]


@pytest.mark.timeout(900)  # a first run builds the serving image
def test_a_kubernetes_online_deployment_serves_from_pods_on_the_cluster(ml_client, stack, cluster, tmp_path):
    rid = RID.format(stack.subscription, stack.resource_group)
    ml_client.compute.begin_create_or_update(KubernetesCompute(
        name="k8s-serve", resource_id=rid, namespace="ml", properties={"instanceTypes": TYPES})).result()
    (tmp_path / "model").mkdir()
    (tmp_path / "model" / "weight.txt").write_text("3")
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "score.py").write_text(SCORE)
    (tmp_path / "request.json").write_text('{"data": [1, 2]}')
    model = ml_client.models.create_or_update(Model(name="k8s-weight", path=str(tmp_path / "model")))
    endpoint = ml_client.online_endpoints.begin_create_or_update(
        KubernetesOnlineEndpoint(name="k8s-ep", compute="k8s-serve", auth_mode="key")).result()
    assert endpoint.provisioning_state == "Succeeded"
    deployment = ml_client.online_deployments.begin_create_or_update(KubernetesOnlineDeployment(
        name="blue", endpoint_name="k8s-ep", model=model, instance_type="small", instance_count=1,
        code_configuration=CodeConfiguration(code=str(tmp_path / "src"), scoring_script="score.py"),
        environment=ENV, readiness_probe=FAST, liveness_probe=FAST,
        # Azure's 5 s default: the first answer through the stand-in's pod proxy took longer on a loaded machine (the
        # router's 408, which the SDK cannot even raise: azure-core's ServiceRequestTimeoutError wants a message)
        request_settings=OnlineRequestSettings(request_timeout_ms=60_000))).result()
    logs = ml_client.online_deployments.get_logs("blue", "k8s-ep", lines=50)
    assert deployment.provisioning_state == "Succeeded", logs

    (pod, sent), = _serving(cluster)
    (server,) = sent["spec"]["containers"]
    assert sent["metadata"]["namespace"] == "ml" and sent["spec"]["nodeSelector"] == {"pool": "cpu"}
    assert server["resources"]["limits"] == {"cpu": "1000m", "memory": str(768 * 2**20)}
    assert [c["name"] for c in sent["spec"]["initContainers"]] == [pods.FETCH]
    ml_client.online_endpoints.begin_create_or_update(
        KubernetesOnlineEndpoint(name="k8s-ep", compute="k8s-serve", auth_mode="key", traffic={"blue": 100})).result()
    answer = wait_until(lambda: _invoked(ml_client, tmp_path / "request.json"), timeout=60, interval=0.5,
                        message="the endpoint to answer")
    assert answer == {"result": [3, 6], "pod": pod}  # the model read from the pod's own copy, the pod's own name
    proxied = [path for method, path, _body in cluster.requests if method == "POST" and "/proxy/" in path]
    assert any(path.startswith(f"/api/v1/namespaces/ml/pods/{pod}") and path.endswith("/proxy/score")
               for path in proxied), proxied
    wait_until(lambda: "init: weight 3 costs $(none)" in ml_client.online_deployments.get_logs("blue", "k8s-ep",
                                                                                              lines=50),
               timeout=30, interval=0.5, message="the pod's log in get_logs")

    ml_client.online_endpoints.begin_delete("k8s-ep").result()
    on_docker = {"label": f"io.kubernetes.pod.name={pod}"}
    wait_until(lambda: not _serving(cluster) and not docker.from_env().containers.list(all=True, filters=on_docker),
               timeout=60, interval=0.5, message="the model server's pod and its containers to be gone")
    ml_client.compute.begin_delete("k8s-serve", action="Detach").result()


def _invoked(ml_client, request) -> dict | None:
    try:
        return json.loads(ml_client.online_endpoints.invoke("k8s-ep", request_file=str(request)))
    except HttpResponseError:
        return None
