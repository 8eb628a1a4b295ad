"""Capacity shortages on the cluster reconciler (FakeRuntime, the test's clock): a low-priority cluster that needs
nodes while capacity is short adds none and shows Resizing with Azure's allocation error, its queued job waits with
the message, `capacity.short` then `capacity.restored` once each; nodes it has are not touched; capacity back, it
grows. A seeded schedule from the settings is short in its windows only, and keeps its course over a restart."""

import random
from datetime import timedelta

import pytest

from emulator.controller.reconcilers.clusters import ClusterReconciler
from emulator.dispatch.celery_app import ready_key
from emulator.domain import events as kinds
from emulator.domain.compute import capacity as rules
from emulator.domain.compute.cluster import NodeState
from emulator.services import capacity, computes, events
from tests.unit.controller.test_clusters_on_fake import put, submit
from tests.unit.controller.test_quota_on_fake import grows_and_dispatches


@pytest.fixture
def clusters(settings, store, fake, broker, clock, scheduler, act) -> ClusterReconciler:
    return ClusterReconciler(settings, store, fake, broker, clock, scheduler, act, entropy=random.Random(5))


def put_low(azure, name: str, min_nodes: int, max_nodes: int) -> str:
    body = {"properties": {"computeType": "AmlCompute", "properties": {
        "vmSize": "Standard_DS3_v2", "vmPriority": "LowPriority",
        "scaleSettings": {"minNodeCount": min_nodes, "maxNodeCount": max_nodes}}}}
    with azure.store.transaction() as repo:
        computes.put(repo, azure.ref, repo.workspace(azure.ref.key), name, body, azure.clock())
    return azure.key(name)


def _events(store, azure, *kind: str) -> list:
    with store.transaction() as repo:
        return list(events.all_of(repo, azure.ref.key, kind))


def _short(store, settings, clock, **body) -> None:
    with store.transaction() as repo:  # what PUT /_emulator/capacity does
        capacity.add(repo, settings, body, clock())


def _job(store, azure, name: str):
    with store.transaction() as repo:
        return repo.job(azure.ref.child_id("jobs", name))


def test_a_low_priority_cluster_waits_resizing_while_capacity_is_short_then_grows_when_it_returns(
        azure, clusters, broker, clock, store, settings):
    key = put_low(azure, "spot", 0, 2)
    put(azure, "steady", 0, 1)  # dedicated: not short
    _short(store, settings, clock, family="standardDSv2Family")
    submit(azure, store, settings, "patient", "spot")
    submit(azure, store, settings, "served", "steady")
    clusters.tick()
    clock.advance(5)
    clusters.tick()

    assert azure.nodes("spot") == [] and len(azure.nodes("steady")) == 1
    view = azure.view("spot")
    assert (view["allocationState"], view["currentNodeCount"], view["targetNodeCount"]) == ("Resizing", 0, 1)
    (error,) = view["errors"]
    assert error == rules.short_error("LowPriority")
    assert view["allocationStateTransitionTime"] == (clock() - timedelta(seconds=5)).isoformat().replace("+00:00", "Z")
    job = _job(store, azure, "patient")
    assert job.status == "Queued" and job.history[-1]["warning"].startswith("Desired number of low priority nodes")
    (short,) = _events(store, azure, kinds.CAPACITY_SHORT)  # once, however many passes it waits
    assert (short.subject, short.data["heldBack"], short.data["family"], short.data["priority"]) == \
        (key, 1, "standardDSv2Family", "LowPriority")
    assert "until" not in short.data  # until restored

    with store.transaction() as repo:  # what DELETE /_emulator/capacity does
        capacity.restore(repo, clock())
    grows_and_dispatches(azure, clusters, broker, store, "spot", "patient", kinds.CAPACITY_RESTORED)
    assert azure.view("spot")["allocationState"] == "Steady"


def test_nodes_a_cluster_has_are_not_touched_and_a_timed_shortage_ends_by_itself(
        azure, clusters, broker, clock, store, settings, fake):
    put_low(azure, "spot", 1, 2)
    clusters.tick()
    (first,) = azure.nodes("spot")
    broker.set(ready_key(first.node_id), 1)
    clusters.tick()
    _short(store, settings, clock, seconds=60)
    until = clock() + timedelta(seconds=60)
    submit(azure, store, settings, "one", "spot")
    submit(azure, store, settings, "two", "spot")
    clusters.tick()  # the idle node takes one job; the other needs a node capacity cannot give

    assert [(n.node_id, n.notice) for n in azure.nodes("spot")] == [(first.node_id, None)]
    assert fake.find(first.container_id).running and azure.signals() == []
    assert azure.view("spot")["allocationState"] == "Resizing"
    (short,) = _events(store, azure, kinds.CAPACITY_SHORT)
    assert short.data["until"] == until.isoformat()
    clock.advance(59)
    clusters.tick()
    assert len(azure.nodes("spot")) == 1
    clock.advance(1)
    clusters.tick()
    assert len(azure.nodes("spot")) == 2 and azure.compute("spot").errors is None
    assert len(_events(store, azure, kinds.CAPACITY_RESTORED)) == 1


def test_a_seeded_schedule_is_short_in_its_windows_only_and_keeps_its_course_over_a_restart(
        azure, clusters, broker, clock, store, settings, fake, scheduler, act):
    settings.capacity_every_seconds, settings.capacity_for_seconds, settings.capacity_seed = 100.0, 30.0, 11
    start = clock()
    clusters.tick()  # the controller's first pass draws the schedule from the settings
    first, _second = rules.Schedule(11, 100.0, 30.0, start).upcoming(start, 2)
    with store.reading() as repo:
        assert capacity.view(repo, settings, clock())["schedule"]["windows"][0] == first.to_row()

    put_low(azure, "spot", 0, 1)
    clock.now = first.start
    restarted = ClusterReconciler(settings, store, fake, broker, clock, scheduler, act, entropy=random.Random(6))
    submit(azure, store, settings, "waits", "spot")
    restarted.tick()
    assert azure.nodes("spot") == [] and azure.view("spot")["allocationState"] == "Resizing"
    clock.now = first.end
    restarted.tick()
    assert len(azure.nodes("spot")) == 1 and azure.compute("spot").errors is None
    assert [e.kind for e in _events(store, azure, kinds.CAPACITY_SHORT, kinds.CAPACITY_RESTORED)] == \
        [kinds.CAPACITY_SHORT, kinds.CAPACITY_RESTORED]
    assert NodeState(azure.nodes("spot")[0].state) == NodeState.PREPARING
