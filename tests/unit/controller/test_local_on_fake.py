"""Local compute on FakeRuntime: a local job waits, NotStarted, for its client's call to the Execution Service (no
node comes for it); once started it brings up a node of the workspace's hidden local capacity, sized by the machine
(no VM size), counted in no quota, and the capacity goes back to zero once the node has idled."""

import pytest

from emulator.controller.effects import Effects
from emulator.controller.reconcilers.clusters import ClusterReconciler
from emulator.controller.reconcilers.jobs import JobReconciler
from emulator.dispatch.celery_app import ready_key
from emulator.domain.compute import local
from emulator.domain.compute.cluster import NodeState
from emulator.runtime.labels import COMPUTE, VM_SIZE
from emulator.services import assets, jobs, usage
from emulator.services.environments import Prepared


@pytest.fixture
def clusters(settings, store, fake, broker, clock, scheduler, act) -> ClusterReconciler:
    return ClusterReconciler(settings, store, fake, broker, clock, scheduler, act)


def _pass(settings, store, azure) -> None:
    reconciler = JobReconciler(settings, lambda *_: None, lambda _env: Prepared(image="python:3.11-slim"))
    with store.transaction() as repo:
        reconciler.tick(repo, azure.clock(), Effects())


def _status(store, azure, name: str) -> str:
    with store.transaction() as repo:
        return repo.job(azure.ref.child_id("jobs", name)).status


def test_a_local_job_runs_on_the_machine_once_its_client_starts_it(azure, store, settings, clusters, broker, clock):
    with store.transaction() as repo:
        assets.put(repo, azure.ref, assets.ENVIRONMENTS, "py", "1",
                   {"properties": {"image": "python:3.11-slim"}}, azure.clock())
        jobs.put(repo, azure.ref, "hello", {"properties": {
            "jobType": "Command", "command": "python train.py", "resources": {"properties": {"IsLocal": {"IsLocal": True}}},
            "environmentId": azure.ref.child_id("environments", "py") + "/versions/1"}}, azure.clock(), client=True)
    _pass(settings, store, azure)
    clusters.tick()
    assert _status(store, azure, "hello") == "NotStarted" and azure.nodes(local.CLUSTER_NAME) == []

    with store.transaction() as repo:  # the SDK's call to the Execution Service
        jobs.start_local(repo, azure.ref, {"RunId": "hello"}, azure.clock())
    _pass(settings, store, azure)
    assert _status(store, azure, "hello") == "Queued"
    clusters.tick()
    (node,) = azure.nodes(local.CLUSTER_NAME)
    (container,) = azure.containers("node")
    assert (container.labels[COMPUTE], container.labels[VM_SIZE]) == (local.CLUSTER_NAME, "Local")
    with store.transaction() as repo:  # the machine is no Azure VM: no core counts
        counted = {u["name"]["value"]: u["currentValue"]
                   for u in usage.usages(repo, settings, azure.ref.subscription,
                                         azure.compute(local.CLUSTER_NAME).location)}
    assert counted["TotalDedicatedCores"] == 0 and counted["TotalLowPriorityCores"] == 0
    broker.set(ready_key(node.node_id), 1)
    clusters.tick()  # the node is idle and is sent the job
    with store.transaction() as repo:
        assert repo.job(azure.ref.child_id("jobs", "hello")).dispatched_at is not None
        jobs.transition(repo.job(azure.ref.child_id("jobs", "hello")), jobs.JobStatus.CANCELED, clock())
    clusters.tick()
    clock.advance(120)  # its nodes go after two idle minutes
    clusters.tick()
    assert [n.state for n in azure.nodes(local.CLUSTER_NAME)] == [NodeState.LEAVING]
