"""The event timeline as the controller records it, on FakeRuntime and the test's clock: a job on a low-priority
node that is preempted has each step recorded once, and the cost meter prices the node's life from those events."""

import random

import pytest

from emulator.controller.reconcilers.clusters import ClusterReconciler
from emulator.controller.reconcilers.meter import TOKEN_FILE, Meter
from emulator.controller.scheduling.preemption import Preemptions
from emulator.dispatch.celery_app import ready_key
from emulator.domain.compute import cost as prices
from emulator.domain.compute.cluster import NodeState
from emulator.domain.compute.preemption import SHUTDOWN_GRACE_SECONDS
from emulator.services import computes, cost, events, preemption
from emulator.store.tables import Node
from tests.unit.controller.test_clusters_on_fake import report, submit


@pytest.fixture
def clusters(settings, store, fake, broker, clock, scheduler, act) -> ClusterReconciler:
    preemptions = Preemptions(settings, scheduler, random.Random(1), lambda: "event-1")
    return ClusterReconciler(settings, store, fake, broker, clock, scheduler, act, preemptions)


def timeline(store) -> list[tuple[str, dict]]:
    """Every event, page after page."""
    found, last = [], 0
    with store.reading() as repo:
        while page := events.after(repo, None, last):
            found += [(e.kind, e.data) for e in page]
            last = page[-1].id
    return found


def test_a_preempted_job_is_on_the_timeline_once_per_step_and_its_node_is_priced(
        azure, clusters, broker, clock, store, settings):
    body = {"properties": {"computeType": "AmlCompute", "properties": {
        "vmSize": "Standard_DS3_v2", "vmPriority": "LowPriority",
        "scaleSettings": {"minNodeCount": 0, "maxNodeCount": 1}}}}
    with store.transaction() as repo:
        computes.put(repo, azure.ref, repo.workspace(azure.ref.key), "spot", body, clock())
    job_reconciler = submit(azure, store, settings, "train", "spot")
    job_key = azure.ref.child_id("jobs", "train").lower()
    clusters.tick()  # a node for the queued job
    (node,) = azure.nodes("spot")
    broker.set(ready_key(node.node_id), 1)
    clock.advance(10)
    clusters.tick()  # up: the job is sent to it
    report(store, job_reconciler, clock, job_key, node.node_id, "claimed")
    report(store, job_reconciler, clock, job_key, node.node_id, "running")

    with store.transaction() as repo:
        compute = repo.compute(azure.key("spot"))
        preemption.preempt(compute, repo.nodes(compute.key), None, "event-1", clock(), settings)
    clusters.tick()  # told
    clock.advance(settings.preemption_notice_seconds)
    clusters.tick()  # taken: SIGTERM
    clock.advance(SHUTDOWN_GRACE_SECONDS)
    clusters.tick()  # killed: the job goes back to the queue

    seen = timeline(store)
    assert [k for k, d in seen if k.startswith("node.") and d["node"] == node.node_id] == [
        "node.added", "node.up", "node.notice", "node.preempted"]
    assert [k for k, d in seen if k == "node.added"] == ["node.added"] * 2  # a fresh node for attempt 2
    assert [d for k, d in seen if k == "node.notice"] == [
        {"node": node.node_id, "eventId": "event-1", "job": "train",
         "notBefore": [d for k, d in seen if k == "node.notice"][0]["notBefore"]}]
    assert [d for k, d in seen if k == "node.preempted"] == [{"node": node.node_id, "job": "train"}]
    (requeued,) = [d for k, d in seen if k == "job.requeued"]
    assert requeued["attempt"] == 2 and requeued["preempted"] is True
    assert [d["attempt"] for k, d in seen if k == "job.attempt"] == [1]
    assert [d["status"] for k, d in seen if k == "job.status"] == [
        "NotStarted", "Starting", "Preparing", "Queued", "Running", "Queued"]
    assert ("cluster.scaled", {"previous": 0, "target": 1}) in seen

    # The node is billed from when it was asked for to when it was taken, at the low-priority rate.
    lived = 10 + settings.preemption_notice_seconds + SHUTDOWN_GRACE_SECONDS
    with store.reading() as repo:
        spent = cost.report(repo, repo.workspace(azure.ref.key), "eastus", clock())
    (line,), (job,) = spent.lines, spent.jobs
    rate = prices.rate("Standard_DS3_v2", "LowPriority", "eastus").per_hour
    second = 0.0  # the fresh node, asked for at the moment the first was taken
    assert (line.name, line.priority, line.seconds) == ("spot", "LowPriority", lived + second)
    assert line.dollars == pytest.approx(rate * lived / 3600)
    assert line.dedicated_dollars == pytest.approx(line.dollars / prices.LOW_PRIORITY_SHARE)
    assert job.seconds == settings.preemption_notice_seconds + SHUTDOWN_GRACE_SECONDS  # it ran until it was taken
    clock.advance(3600)  # a preempted node costs nothing more; the fresh one, still there, an hour
    with store.reading() as repo:
        assert cost.report(repo, repo.workspace(azure.ref.key), "eastus", clock()).lines[0].seconds == lived + 3600


def test_a_node_that_takes_a_job_before_it_is_seen_idle_is_up_on_the_timeline_before_the_attempt(
        azure, clusters, clock, store, settings):
    body = {"properties": {"computeType": "AmlCompute", "properties": {
        "vmSize": "Standard_DS3_v2", "scaleSettings": {"minNodeCount": 0, "maxNodeCount": 1}}}}
    with store.transaction() as repo:
        computes.put(repo, azure.ref, repo.workspace(azure.ref.key), "quick", body, clock())
    job_reconciler = submit(azure, store, settings, "eager", "quick")
    clusters.tick()  # a node for the queued job
    (node,) = azure.nodes("quick")
    clusters.tick()  # the job goes to the cluster's queue, where the node's worker finds it once it starts
    assert azure.nodes("quick")[0].state == NodeState.PREPARING
    report(store, job_reconciler, clock, azure.ref.child_id("jobs", "eager").lower(), node.node_id, "claimed")

    kinds = [k for k, d in timeline(store) if k.startswith("node.") or k == "job.attempt"]
    assert kinds == ["node.added", "node.up", "job.attempt"]
    clusters.tick()  # seen running: not up a second time
    assert [k for k, _ in timeline(store)].count("node.up") == 1


def test_the_meter_records_a_crossed_budget_once_prunes_old_events_and_keeps_a_scrape_token(
        azure, store, clock, settings):
    settings = settings.model_copy(update={"events_keep": 1000, "meter_interval_seconds": 5.0})
    meter = Meter(settings, store, clock, b"s" * 32)
    with store.transaction() as repo:
        workspace = repo.workspace(azure.ref.key)
        cost.set_budget(workspace, {"dollars": 0.01})
        for n in range(1003):
            events.record(repo, workspace.key, "node.added", azure.key("big"), clock(), node=f"n{n}",
                          vmSize="Standard_ND40rs_v2", priority="Dedicated")
    meter.tick()  # nothing spent yet: 1003 nodes asked for this instant
    assert [k for k, _ in timeline(store) if k == "budget.exceeded"] == []
    assert len(timeline(store)) == 1000  # the oldest three went
    token = (settings.data_dir / TOKEN_FILE).read_text()
    assert token.count(".") == 2 and (settings.data_dir / TOKEN_FILE).stat().st_mode & 0o077 == 0

    body = {"properties": {"computeType": "AmlCompute", "properties": {"vmSize": "Standard_ND40rs_v2"}}}
    with store.transaction() as repo:  # a node that lives on, at $22.03 an hour
        computes.put(repo, azure.ref, repo.workspace(azure.ref.key), "real", body, clock())
        events.record(repo, azure.ref.key, "node.added", azure.key("real"), clock(), node="alive",
                      vmSize="Standard_ND40rs_v2", priority="Dedicated")
        repo.add(Node(node_id="alive", compute_key=azure.key("real"), state="idle", created_at=clock(),
                      state_changed_at=clock()))
    clock.advance(4)
    meter.tick()  # within the interval: not looked at, though crossed
    assert [k for k, _ in timeline(store) if k == "budget.exceeded"] == []
    clock.advance(1)
    meter.tick()  # the 1003 nodes whose rows are gone ended at their only event: 5 s of "alive" cross it
    clock.advance(5)
    meter.tick()
    crossed = [d for k, d in timeline(store) if k == "budget.exceeded"]
    assert len(crossed) == 1 and crossed[0]["dollars"] == 0.01 and crossed[0]["spent"] >= 0.01
