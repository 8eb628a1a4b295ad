"""Kubernetes compute with a kubeconfig, at the API boundary: the official client talks to a stand-in API server on
127.0.0.1 (tests/kube_api.py; no real one can run here). Attach asks for the namespace and refuses one the server
says is not there; a job becomes one pod in the compute's namespace with its instance type's nodeSelector, requests
and limits, the environment's image and the resolved command; the job follows the pod's phase, its log is read back,
a failed pod fails it with the exit code, and a cancel deletes the pod."""

import pytest

from emulator.controller.effects import Effects
from emulator.controller.reconcilers.jobs import JobReconciler
from emulator.controller.reconcilers.pods import PodReconciler
from emulator.controller.specs.pods import pod_name
from emulator.domain.jobs import artifacts
from emulator.errors import ValidationFailed
from emulator.services import assets, computes, jobs, kubernetes
from emulator.services.environments import Prepared
from tests.kube_api import FakeKubeApi

pytestmark = pytest.mark.usefixtures("sqlite_only")
AKS = "/subscriptions/s1/resourceGroups/rg/providers/Microsoft.ContainerService/managedClusters/aks1"
SMALL = {"nodeSelector": {"pool": "cpu"},
         "resources": {"requests": {"cpu": "250m", "memory": "512Mi"}, "limits": {"cpu": "1500m", "memory": "1Gi"}}}


@pytest.fixture
def sqlite_only(database_url):
    if database_url and database_url.startswith("postgresql"):
        pytest.skip("the API boundary is the same on either store")


@pytest.fixture
def api(settings):
    server = FakeKubeApi(namespaces={"default", "ml"})
    server.write_kubeconfig(kubernetes.kubeconfig_path(settings.data_dir, AKS))
    yield server
    server.close()


def _attach(azure, namespace: str = "ml") -> None:
    with azure.store.transaction() as repo:
        computes.put(repo, azure.ref, repo.workspace(azure.ref.key), "k8s", {"properties": {
            "computeType": "Kubernetes", "resourceId": AKS,
            "properties": {"namespace": namespace, "defaultInstanceType": "small",
                           "instanceTypes": {"small": SMALL}}}}, azure.clock(), data_dir=azure.settings.data_dir)


def _submit(azure, name: str, instance_type: str | None = None) -> None:
    with azure.store.transaction() as repo:
        assets.put(repo, azure.ref, assets.ENVIRONMENTS, "py", "1", {"properties": {"image": "python:3.11-slim"}},
                   azure.clock())
        resources = {"instanceCount": 1, **({"instanceType": instance_type} if instance_type else {})}
        jobs.put(repo, azure.ref, name, {"properties": {
            "jobType": "Command", "command": "python train.py --x ${{inputs.x}}",
            "inputs": {"x": {"jobInputType": "literal", "value": "3"}}, "environmentVariables": {"A": "1"},
            "computeId": azure.ref.child_id("computes", "k8s"), "resources": resources,
            "environmentId": azure.ref.child_id("environments", "py") + "/versions/1"}},
            azure.clock(), data_dir=azure.settings.data_dir)


def _jobs_pass(settings, store, azure) -> None:
    reconciler = JobReconciler(settings, lambda *_: None, lambda _env: Prepared(image="python:3.11-slim"))
    with store.transaction() as repo:
        reconciler.tick(repo, azure.clock(), Effects())


def _job(azure, name: str):
    with azure.store.transaction() as repo:
        return repo.job(azure.ref.child_id("jobs", name))


def test_attach_asks_the_cluster_for_its_namespace(azure, api):
    with pytest.raises(ValidationFailed) as caught:
        _attach(azure, namespace="nope")
    assert caught.value.target == "properties.properties.namespace" and "does not exist" in caught.value.message
    assert azure.compute("k8s") is None  # nothing half-attached
    _attach(azure)
    assert [r[:2] for r in api.requests] == [("GET", "/api/v1/namespaces/nope"), ("GET", "/api/v1/namespaces/ml")]
    assert azure.compute("k8s").provisioning_state == "Succeeded"


def test_a_job_runs_as_a_pod_and_follows_its_phase(azure, api, settings, store, clock):
    _attach(azure)
    _submit(azure, "hello")
    assert _job(azure, "hello").compute_key == azure.key("k8s")  # the compute itself: no local stand-in
    _jobs_pass(settings, store, azure)
    pods = PodReconciler(settings, store, clock)
    pods.tick()
    ((namespace, name), sent), = api.pods.items()
    assert namespace == "ml" and sent["metadata"]["namespace"] == "ml"
    assert sent["spec"]["nodeSelector"] == {"pool": "cpu"} and sent["spec"]["restartPolicy"] == "Never"
    (container,) = sent["spec"]["containers"]
    assert container["image"] == "python:3.11-slim"
    assert container["command"] == ["/bin/sh", "-c", "python train.py --x 3"]
    assert container["resources"] == {"requests": {"cpu": "250m", "memory": str(512 * 2**20)},
                                      "limits": {"cpu": "1500m", "memory": str(2**30)}}
    assert {"name": "A", "value": "1"} in container["env"]
    assert _job(azure, "hello").status == "Queued"  # Pending: waiting for a node of the cluster
    api.phases[name] = ("Running", None)
    pods.tick()
    assert _job(azure, "hello").status == "Running"
    api.phases[name], api.logs[name] = ("Succeeded", 0), "hello from the pod\n"
    pods.tick()
    _jobs_pass(settings, store, azure)
    assert _job(azure, "hello").status == "Completed"
    log = settings.data_dir / artifacts.directory(azure.ref, "hello") / artifacts.log_name(0, 1)
    assert "hello from the pod" in log.read_text() and f"pod ml/{name}" in log.read_text()
    assert [m for m, p, _ in api.requests if p.endswith("/pods")] == ["POST"]  # created once


def test_a_failed_pod_fails_the_job_and_a_cancel_deletes_the_pod(azure, api, settings, store, clock):
    _attach(azure)
    _submit(azure, "bad")
    _submit(azure, "stopped")
    _jobs_pass(settings, store, azure)
    pods = PodReconciler(settings, store, clock)
    pods.tick()
    bad, stopped = (pod_name(azure.ref.child_id("jobs", job).lower(), 1) for job in ("bad", "stopped"))
    assert {name for _, name in api.pods} == {bad, stopped}
    api.phases[bad], api.logs[bad] = ("Failed", 3), "Traceback: boom\n"
    pods.tick()
    job = _job(azure, "bad")
    assert job.status == "Failed" and job.error["innerError"]["exitCode"] == 3 and "boom" in job.error["message"]
    with store.transaction() as repo:
        jobs.cancel(repo, azure.ref, "stopped", clock())
    pods.tick()
    _jobs_pass(settings, store, azure)
    assert _job(azure, "stopped").status == "Canceled"
    assert ("DELETE", f"/api/v1/namespaces/ml/pods/{stopped}") in [r[:2] for r in api.requests]


def test_an_unknown_instance_type_is_refused_at_submit(azure, api):
    _attach(azure)
    with pytest.raises(ValidationFailed) as caught:
        _submit(azure, "huge", instance_type="huge")
    assert caught.value.target == "properties.resources.instanceType"
    assert _job(azure, "huge") is None

