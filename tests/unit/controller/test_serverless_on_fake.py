"""Serverless compute on FakeRuntime: a job that names no compute brings up a node of its hidden cluster, of the VM
size and priority the job asked for, and the cluster goes back to zero once the node has idled."""

import pytest

from emulator.controller.effects import Effects
from emulator.controller.reconcilers.clusters import ClusterReconciler
from emulator.controller.reconcilers.jobs import JobReconciler
from emulator.dispatch.celery_app import ready_key
from emulator.domain.compute.cluster import NodeState
from emulator.runtime.labels import COMPUTE, PRIORITY, VM_SIZE
from emulator.services import assets, jobs, usage
from emulator.services.environments import Prepared


@pytest.fixture
def clusters(settings, store, fake, broker, clock, scheduler, act) -> ClusterReconciler:
    return ClusterReconciler(settings, store, fake, broker, clock, scheduler, act)


def submit_serverless(azure, store, settings, name: str, **props) -> str:
    """A command job with no compute, taken to Queued; the name of the hidden cluster it runs on."""
    with store.transaction() as repo:
        assets.put(repo, azure.ref, assets.ENVIRONMENTS, "py", "1",
                   {"properties": {"image": "python:3.11-slim"}}, azure.clock())
        job, _ = jobs.put(repo, azure.ref, name, {"properties": {
            "jobType": "Command", "command": "python train.py",
            "environmentId": azure.ref.child_id("environments", "py") + "/versions/1", **props}}, azure.clock())
        cluster = repo.compute(job.compute_key).name
    reconciler = JobReconciler(settings, lambda *_: None, lambda _env: Prepared(image="python:3.11-slim"))
    with store.transaction() as repo:
        reconciler.tick(repo, azure.clock(), Effects())
    return cluster


def test_a_spot_job_without_compute_scales_its_hidden_cluster_up_then_back_to_zero(
        azure, store, settings, clusters, broker, clock):
    name = submit_serverless(azure, store, settings, "hello", queueSettings={"jobTier": "Spot"},
                             resources={"instanceType": "Standard_D2_v3"})
    assert name == "serverless.lowpriority.standard_d2_v3"
    clusters.tick()

    (node,) = azure.nodes(name)
    (container,) = azure.containers("node")
    assert node.state == NodeState.PREPARING
    assert (container.labels[COMPUTE], container.labels[PRIORITY], container.labels[VM_SIZE]) == \
        (name, "LowPriority", "Standard_D2_v3")
    with store.transaction() as repo:  # its cores count in list_usage, as Azure counts serverless under its quota
        counted = {u["name"]["value"]: u["currentValue"]
                   for u in usage.usages(repo, settings, azure.ref.subscription, azure.compute(name).location)}
    assert counted["TotalLowPriorityCores"] == 2 and counted["TotalDedicatedCores"] == 0
    broker.set(ready_key(node.node_id), 1)
    clusters.tick()  # the node is idle and is sent the job
    with store.transaction() as repo:
        assert repo.job(azure.ref.child_id("jobs", "hello")).dispatched_at is not None

    with store.transaction() as repo:  # the job is over (its node's reports are the jobs tests' concern)
        job = repo.job(azure.ref.child_id("jobs", "hello"))
        jobs.transition(job, jobs.JobStatus.CANCELED, clock())
    clusters.tick()
    clock.advance(120)  # serverless nodes go after two idle minutes
    clusters.tick()
    assert [n.state for n in azure.nodes(name)] == [NodeState.LEAVING]
