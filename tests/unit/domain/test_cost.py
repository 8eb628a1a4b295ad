"""The cost meter's pure rules: a price for every VM size, lifetimes from events, seconds from histories."""

from datetime import UTC, datetime, timedelta

import pytest

from emulator.domain import events
from emulator.domain.compute import cost, vm_sizes
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
    assert not cost.rate("Standard_D3", "Dedicated", "eastus").exact  # D v1: priced as D3_v2, and says so
    assert cost.rate("Standard_DS3_v2", "Dedicated", "eastus").dollars(1800) == pytest.approx(0.1465)


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
