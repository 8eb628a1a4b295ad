"""Core quota on the cluster reconciler (FakeRuntime, the test's clock): a cluster grows only as far as the quota
allows, its queued job waits with Azure's quota message on the job and the compute, one `quota.wait` event per wait,
and it grows once the quota frees."""

import pytest

from emulator.controller.effects import Effects
from emulator.controller.reconcilers.clusters import ClusterReconciler
from emulator.dispatch.celery_app import ready_key
from emulator.domain import events as kinds
from emulator.services import events, jobs, quotas, usage
from tests.unit.controller.test_clusters_on_fake import bring_up, put, submit


@pytest.fixture
def clusters(settings, store, fake, broker, clock, scheduler, act) -> ClusterReconciler:
    return ClusterReconciler(settings, store, fake, broker, clock, scheduler, act)


def _events(store, azure, kind: str) -> list:
    with store.transaction() as repo:
        return [e for e in events.all_of(repo, azure.ref.key, (kind,))]


def test_a_job_waits_queued_for_quota_once_on_the_timeline_then_runs_when_it_is_raised(
        azure, clusters, broker, clock, store, settings):
    settings.quota_family_cores = 8  # two Standard_DS3_v2 nodes (4 vCPUs each) in the family
    bring_up(azure, clusters, broker, "holder", 2)
    key = put(azure, "waiter", 0, 2)
    submit(azure, store, settings, "patient", "waiter")
    clusters.tick()
    clusters.tick()

    assert azure.nodes("waiter") == []
    (error,) = azure.compute("waiter").errors
    assert error["error"]["code"] == "QuotaExceeded"
    assert "Standard DSv2 family vCPU quota of 8 (8 in use)" in error["error"]["message"]
    view = azure.view("waiter")
    assert (view["allocationState"], view["targetNodeCount"]) == ("Steady", 0)
    with store.transaction() as repo:
        job = repo.job(azure.ref.child_id("jobs", "patient"))
        assert job.status == "Queued" and "vCPU quota of 8" in job.history[-1]["warning"]
        listed = {u["name"]["value"]: (u["currentValue"], u["limit"])
                  for u in usage.usages(repo, settings, azure.ref.subscription, "local")}
    assert listed["standardDSv2Family"] == (8, 8) and listed["TotalDedicatedCores"] == (8, 24)
    (wait,) = _events(store, azure, kinds.QUOTA_WAIT)  # once, however many passes it waits
    assert (wait.subject, wait.data["quota"], wait.data["heldBack"]) == (key, "standardDSv2Family", 1)

    with store.transaction() as repo:  # what PUT /_emulator/quotas does
        quotas.set_override(repo, None, {"families": {"standardDSv2Family": 12}})
    grows_and_dispatches(azure, clusters, broker, store, "waiter", "patient", kinds.QUOTA_FREED)


def grows_and_dispatches(azure, clusters, broker, store, cluster: str, job: str, ended: str) -> None:
    """The wait is over: the next pass adds a node, the cluster's errors clear, the wait's end is on the timeline
    once, and the waiting job goes to the node once it is ready."""
    clusters.tick()
    (node,) = azure.nodes(cluster)
    assert azure.compute(cluster).errors is None
    assert [e.subject for e in _events(store, azure, ended)] == [azure.key(cluster)]
    broker.set(ready_key(node.node_id), 1)
    clusters.tick()
    with store.transaction() as repo:
        assert repo.job(azure.ref.child_id("jobs", job)).dispatched_at is not None


def test_a_workspace_cap_holds_its_clusters_below_the_regional_quota(azure, clusters, broker, store, settings):
    with store.transaction() as repo:
        quotas.set_override(repo, azure.ref.key, {"totalDedicatedCores": 4})
    put(azure, "capped", 0, 3)
    submit(azure, store, settings, "one", "capped")
    submit(azure, store, settings, "two", "capped")
    clusters.tick()
    assert len(azure.nodes("capped")) == 1
    error, warning = azure.compute("capped").errors  # and maxNodeCount alone is above the cap: a warning too
    assert error["error"]["message"].startswith("Cluster scale-up is held back by quota") \
        and "The specified workspace has a total vCPU quota of 4" in error["error"]["message"]
    assert warning["error"]["code"] == "ClusterMaxNodesExceedCoreQuota" \
        and "can only grow to 1 node of" in warning["error"]["message"]


def test_a_job_whose_nodes_alone_are_above_the_quota_fails_as_in_azure_and_one_that_fits_waits(
        azure, store, settings, clock):
    settings.quota_family_cores = 8  # two Standard_DS3_v2 nodes (4 vCPUs each)
    put(azure, "small-quota", 0, 3)
    reconciler = submit(azure, store, settings, "fits", "small-quota")  # one node: it would wait, not fail
    with store.transaction() as repo:
        jobs.put(repo, azure.ref, "three-nodes", {"properties": {
            "jobType": "Command", "command": "python train.py", "resources": {"instanceCount": 3},
            "environmentId": azure.ref.child_id("environments", "py") + "/versions/1",
            "computeId": azure.ref.child_id("computes", "small-quota")}}, clock())
    for _ in range(2):  # queued, then judged
        with store.transaction() as repo:
            reconciler.tick(repo, clock(), Effects())

    with store.transaction() as repo:
        big, small = repo.job(azure.ref.child_id("jobs", "three-nodes")), repo.job(azure.ref.child_id("jobs", "fits"))
        assert small.status == "Queued"
        assert big.status == "Failed"
        assert big.error["message"] == (
            "Job submission to AzureML Compute encountered an Exception with status code JobNodeCountExceedsCoreQuota, "
            "The specified subscription has a Standard DSv2 family vCPU quota of 8 and is less than the requested job "
            "node count of 3 which maps to 12 vCPUs. Talk to your Subscription Admin or refer to "
            "https://docs.microsoft.com/azure/machine-learning/how-to-manage-quotas#request-quota-increases to "
            "increase the Standard DSv2 family vCPU quota.")
