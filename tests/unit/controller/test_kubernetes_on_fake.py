"""Kubernetes compute without a kubeconfig, on FakeRuntime: a job naming an instance type brings up a node of that
instance type's hidden cluster, whose node and job containers get its limits as they are (a pod's, not scaled like a
VM's), counted in no quota; the job's message opens with the note that it runs on the local runtime; detaching the
compute takes its nodes away."""

import pytest

from emulator.controller.effects import Actuator, Effects
from emulator.controller.reconcilers.clusters import ClusterReconciler
from emulator.controller.reconcilers.jobs import JobReconciler
from emulator.dispatch.celery_app import cluster_queue, ready_key
from emulator.domain.compute import kubernetes
from emulator.runtime.labels import COMPUTE
from emulator.services import assets, computes, jobs, usage
from emulator.services.environments import Prepared

AKS = "/subscriptions/s1/resourceGroups/rg/providers/Microsoft.ContainerService/managedClusters/aks1"
SMALL = {"nodeSelector": {"pool": "cpu"},
         "resources": {"requests": {"cpu": "250m", "memory": "512Mi"}, "limits": {"cpu": "1500m", "memory": "1Gi"}}}


@pytest.fixture
def sent() -> list[tuple[str, dict]]:
    return []


@pytest.fixture
def clusters(settings, store, fake, broker, clock, scheduler, sent) -> ClusterReconciler:
    act = Actuator(fake, broker, settings.stack, send=lambda queue, message: sent.append((queue, message)))
    return ClusterReconciler(settings, store, fake, broker, clock, scheduler, act)


def _pass(settings, store, azure) -> None:
    reconciler = JobReconciler(settings, lambda *_: None, lambda _env: Prepared(image="python:3.11-slim"))
    with store.transaction() as repo:
        reconciler.tick(repo, azure.clock(), Effects())


def _attach_and_submit(azure, instance_type: str | None) -> None:
    with azure.store.transaction() as repo:
        assets.put(repo, azure.ref, assets.ENVIRONMENTS, "py", "1", {"properties": {"image": "python:3.11-slim"}},
                   azure.clock())
        computes.put(repo, azure.ref, repo.workspace(azure.ref.key), "k8s", {"properties": {
            "computeType": "Kubernetes", "resourceId": AKS,
            "properties": {"namespace": "ml", "instanceTypes": {"small": SMALL}}}}, azure.clock(), data_dir=azure.settings.data_dir)
        resources = {"instanceCount": 1, **({"instanceType": instance_type} if instance_type else {})}
        jobs.put(repo, azure.ref, "hello", {"properties": {
            "jobType": "Command", "command": "python train.py", "computeId": azure.ref.child_id("computes", "k8s"),
            "resources": resources, "environmentId": azure.ref.child_id("environments", "py") + "/versions/1"}},
            azure.clock(), data_dir=azure.settings.data_dir)


@pytest.mark.parametrize(("asked", "cpus", "memory"), [("small", 1.5, 2**30), (None, 2.0, 2 * 2**30)])
def test_an_instance_types_job_runs_on_a_node_of_its_limits(azure, store, settings, clusters, broker, sent, asked,
                                                             cpus, memory):
    _attach_and_submit(azure, asked)
    hidden = kubernetes.fallback_cluster_name("k8s", asked or kubernetes.DEFAULT_NAME)
    with store.transaction() as repo:
        job = repo.job(azure.ref.child_id("jobs", "hello"))
        assert job.compute_key == azure.key(hidden) and job.body["computeId"].endswith("/computes/k8s")
    _pass(settings, store, azure)
    clusters.tick()
    (node,) = azure.nodes(hidden)
    (container,) = azure.containers("node")
    assert container.labels[COMPUTE] == hidden
    (spec,) = azure.runs("node")
    assert (spec.cpus, spec.memory_bytes) == (cpus, memory)  # the instance type's limits, unscaled
    with store.transaction() as repo:  # attached compute: no Azure quota counts it
        counted = {u["name"]["value"]: u["currentValue"]
                   for u in usage.usages(repo, settings, azure.ref.subscription, azure.compute(hidden).location)}
    assert counted["TotalDedicatedCores"] == 0
    broker.set(ready_key(node.node_id), 1)
    clusters.tick()  # the idle node is sent the job
    ((queue, message),) = sent
    assert queue == cluster_queue(azure.key(hidden))
    assert message["notes"][-1].startswith(f"amlemu: no kubeconfig for {AKS}: running on the local runtime")
    assert (message["cpus"], message["memory_bytes"]) == (cpus, memory)

    with store.transaction() as repo:  # detached: its stand-in cluster goes, with its nodes
        computes.delete(repo, azure.ref, "k8s", azure.clock())
    clusters.tick()
    assert azure.compute("k8s") is None and azure.nodes(hidden) == [] and azure.compute(hidden) is None
