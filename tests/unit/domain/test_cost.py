"""The cost meter's pure rules: a price for every VM size, lifetimes from events, seconds from histories."""

from datetime import UTC, datetime, timedelta

import pytest

from emulator.domain import events
from emulator.domain.compute import cost, instance, vm_sizes
from emulator.domain.events import Happened
from emulator.errors import ValidationFailed

T0 = datetime(2026, 1, 1, 12, tzinfo=UTC)


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def test_every_size_of_the_catalogue_has_a_price_low_priority_a_fifth_and_regions_their_factor():
    for size in vm_sizes.VM_SIZES:
        dedicated = cost.rate(size.name, "Dedicated", "eastus")
        assert dedicated.per_hour > 0, size.name
        assert cost.rate(size.name, "LowPriority", "eastus").per_hour == pytest.approx(dedicated.per_hour * 0.2)
        assert cost.rate(size.name, "Dedicated", "westeurope").per_hour == pytest.approx(dedicated.per_hour * 1.2)
    # published figures where there are some; the emulator's own region prices as East US
    assert cost.rate("Standard_DS3_v2", "Dedicated", "local") == cost.Rate(
        "Standard_DS3_v2", "Dedicated", "local", 0.293, True)
    assert cost.rate("Standard_D2s_v3", "Dedicated", "eastus").per_hour == pytest.approx(0.096)
    assert cost.rate("Standard_NC6s_v3", "Dedicated", "eastus").per_hour == pytest.approx(3.06)
    assert not cost.rate("Standard_D1", "Dedicated", "eastus").exact  # D v1 with no figure: as D1_v2, and says so
    assert cost.rate("Standard_D1", "Dedicated", "eastus").per_hour == pytest.approx(0.073)
    assert cost.rate("Standard_DS3_v2", "Dedicated", "eastus").dollars(1800) == pytest.approx(0.1465)


@pytest.mark.parametrize(("size", "per_hour"), [
    ("Standard_DS1_v2", 0.073), ("Standard_DS2_v2", 0.146), ("Standard_DS12_v2", 0.371), ("Standard_DS15_v2", 1.853),
    ("Standard_D3", 0.308), ("Standard_NC4as_T4_v3", 0.526), ("Standard_NC64as_T4_v3", 4.352),
    ("Standard_ND6s", 2.07), ("Standard_ND24s", 8.28), ("Standard_NV12s_v3", 1.14), ("Standard_NV48s_v3", 4.56),
    ("Standard_NC24", 3.60), ("Standard_E16_v3", 1.008)])
def test_the_figures_checked_against_a_published_price_list(size, per_hour):
    """East US, Linux, pay as you go, as the price list quoted in cost.py's docstring gives them."""
    rate = cost.rate(size, "Dedicated", "eastus")
    assert rate.per_hour == pytest.approx(per_hour) and rate.exact


def test_an_unknown_region_is_refused_naming_the_field():
    with pytest.raises(ValidationFailed) as refused:
        cost.rate("Standard_DS3_v2", "Dedicated", "mars")
    assert refused.value.target == "region" and "eastus" in refused.value.message


def test_node_lifetimes_end_at_preemption_or_removal_and_at_the_last_event_when_the_node_is_gone_unrecorded():
    def node(kind, seconds, name, **data):
        return Happened(at(seconds), kind, "c", {"node": name, **data})
    lives = events.node_lifetimes([
        node(events.NODE_ADDED, 0, "a", vmSize="Standard_DS3_v2", priority="LowPriority"),
        node(events.NODE_UP, 5, "a"), node(events.NODE_NOTICE, 10, "a"), node(events.NODE_PREEMPTED, 40, "a"),
        node(events.NODE_GONE, 100, "a"),  # after its end: changes nothing
        node(events.NODE_ADDED, 40, "b", vmSize="Standard_DS3_v2"), node(events.NODE_UP, 50, "b"),
        node(events.NODE_ADDED, 60, "c", vmSize="Standard_DS3_v2"), node(events.NODE_LEAVING, 70, "c"),
    ], alive={"b"})
    assert [(life.node, life.priority, life.start, life.end) for life in lives] == [
        ("a", "LowPriority", at(0), at(40)), ("b", "Dedicated", at(40), None), ("c", "Dedicated", at(60), at(70))]
    totals = cost.node_costs(lives, "eastus", now=at(100))
    seconds, dollars = totals["c"]
    assert seconds == 40 + 60 + 10
    assert dollars == pytest.approx((40 * 0.293 * 0.2 + 70 * 0.293) / 3600)


def test_a_compute_instance_is_billed_from_asked_for_until_stopped_and_not_while_stopped():
    S = instance.InstanceState
    assert instance.billing(None, S.CREATING) is True  # a new instance: its VM from now
    assert instance.billing(S.CREATING, S.RUNNING) is None and instance.billing(S.RUNNING, S.JOB_RUNNING) is None
    assert instance.billing(S.STOPPING, S.STOPPED) is False and instance.billing(S.STOPPED, S.STARTING) is True
    assert instance.billing(S.RUNNING, S.DELETING) is False and instance.billing(S.STOPPED, S.DELETING) is None
    assert instance.billing(S.CREATING, S.CREATE_FAILED) is False and instance.billing(S.RUNNING, S.STOPPING) is None

    def happened(kind, seconds, key="ci", **data):
        return Happened(at(seconds), kind, key, data)
    spells = events.instance_lifetimes([
        happened(events.INSTANCE_STARTED, 0, vmSize="Standard_DS3_v2"), happened(events.INSTANCE_STOPPED, 60),
        happened(events.INSTANCE_STOPPED, 70),  # stopped again: nothing more
        happened(events.INSTANCE_STARTED, 100, vmSize="Standard_DS3_v2"),  # running still
        happened(events.NODE_ADDED, 5, node="n"),  # a cluster's: not an instance's
        happened(events.INSTANCE_STARTED, 10, "gone", vmSize="Standard_DS1_v2"),  # its stop went with its workspace
        happened(events.INSTANCE_STARTED, 30, "gone", vmSize="Standard_DS1_v2"),
    ], existing={"ci"})
    assert [(s.compute, s.vm_size, s.priority, s.start, s.end) for s in spells] == [
        ("ci", "Standard_DS3_v2", "Dedicated", at(0), at(60)), ("gone", "Standard_DS1_v2", "Dedicated", at(10), at(30)),
        ("ci", "Standard_DS3_v2", "Dedicated", at(100), None)]
    seconds, dollars = cost.node_costs(spells, "eastus", now=at(400))["ci"]
    assert seconds == 60 + 300 and dollars == pytest.approx(360 * 0.293 / 3600)


def test_a_jobs_busy_seconds_count_every_attempts_running_and_finalizing():
    history = [{"status": s, "time": at(t).isoformat()} for s, t in (
        ("NotStarted", 0), ("Queued", 1), ("Running", 10), ("Queued", 40), ("Running", 60), ("Finalizing", 90),
        ("Completed", 95))]
    assert cost.busy_seconds(history, now=at(1000)) == 30 + 35
    assert cost.busy_seconds(history[:5], now=at(70)) == 30 + 10  # still running: until now


def test_a_deployments_instances_are_priced_over_time_and_a_budget_is_crossed_once():
    series = [(at(0), 1, "Standard_DS3_v2"), (at(60), 3, "Standard_DS3_v2"), (at(120), 0, "Standard_DS3_v2")]
    seconds, dollars = cost.deployment_cost(series, "eastus", now=at(1000))
    assert seconds == 60 + 180 and dollars == pytest.approx(240 * 0.293 / 3600)
    assert cost.budget_crossed({"dollars": 1.0, "exceededAt": None}, 1.0)
    assert not cost.budget_crossed({"dollars": 1.0, "exceededAt": at(0).isoformat()}, 5.0)
    assert not cost.budget_crossed({"dollars": 1.0, "exceededAt": None}, 0.99) and not cost.budget_crossed(None, 9)
