"""Capacity rules with a fake clock: what a shortage covers and when, the seeded schedule that replays its windows,
the cluster planner holding nodes back while capacity is short, and bad requests naming their field."""

import random
from datetime import UTC, datetime, timedelta

import pytest

from emulator.domain.compute import capacity as c
from emulator.domain.compute import cluster
from emulator.domain.compute.cluster import NodeState, NodeView, ScaleSettings
from emulator.errors import ValidationFailed

T0 = datetime(2026, 11, 27, 18, tzinfo=UTC)
FAMILIES = {"standardDSv2Family", "standardNCFamily"}


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def test_a_scope_covers_its_region_family_and_priority_and_star_covers_all():
    low_ds = c.Scope("East US", "standardDSv2Family")
    assert low_ds.covers("eastus", "standardDSv2Family", "LowPriority")
    assert not low_ds.covers("westus", "standardDSv2Family", "LowPriority")
    assert not low_ds.covers("eastus", "standardNCFamily", "LowPriority")
    assert not low_ds.covers("eastus", "standardDSv2Family", "Dedicated")  # low priority unless asked
    assert c.Scope().covers("anywhere", "anyFamily", "LowPriority")
    assert c.Scope(priority="Dedicated").covers("local", "standardNCFamily", "Dedicated")


def test_a_shortage_is_in_force_from_its_start_until_its_end_or_until_restored():
    timed = c.Shortage(c.Scope(), at(0), at(30))
    assert not timed.active(at(-1)) and timed.active(at(0)) and timed.active(at(29.9)) and not timed.active(at(30))
    assert c.Shortage(c.Scope(), at(0)).active(at(10**6))
    assert c.Shortage.from_row(timed.to_row()) == timed


def test_in_force_picks_the_longest_shortage_that_covers_the_vm():
    short = c.Shortage(c.Scope(family="standardDSv2Family"), at(0), at(30))
    longer = c.Shortage(c.Scope(), at(0), at(90))
    other = c.Shortage(c.Scope(family="standardNCFamily"), at(0))
    assert c.in_force([short, longer, other], None, "local", "standardDSv2Family", "LowPriority", at(10)) == longer
    assert c.in_force([short, other], None, "local", "standardDSv2Family", "LowPriority", at(40)) is None
    assert c.in_force([short, longer], None, "local", "standardDSv2Family", "Dedicated", at(10)) is None
    assert c.in_force([longer, other], None, "local", "standardNCFamily", "LowPriority", at(10)) == other


def test_the_same_seed_replays_the_same_windows_and_another_seed_does_not():
    def windows(seed: int, since: datetime = T0) -> list[tuple[float, float]]:
        schedule = c.Schedule(seed, every=60.0, length=20.0, since=since)
        return [((w.start - since).total_seconds(), (w.end - since).total_seconds())
                for w in schedule.upcoming(since, 10)]

    first = windows(7)
    assert first == windows(7) == windows(7, since=at(3600))  # relative to when the schedule began
    assert first != windows(8)
    assert all(a_end < b_start for (_, a_end), (b_start, _) in zip(first, first[1:], strict=False))
    gaps = [b - a for (_, a), (b, _) in zip([(0, 0), *first], first, strict=False)]
    lengths = [end - start for start, end in first]
    assert 20 < sum(gaps) / len(gaps) < 180 and 5 < sum(lengths) / len(lengths) < 60  # means near 60 s and 20 s


def test_a_schedule_is_short_inside_its_windows_only():
    schedule = c.Schedule(3, every=60.0, length=20.0, since=T0, scope=c.Scope(family="standardDSv2Family"))
    first, second = schedule.upcoming(T0, 2)
    inside = first.start + (first.end - first.start) / 2
    assert schedule.at(inside) == first and schedule.at(first.end) is None and schedule.at(second.start) == second
    assert schedule.at(first.start - timedelta(seconds=0.001)) is None
    assert c.in_force([], schedule, "local", "standardDSv2Family", "LowPriority", inside) == first
    assert c.in_force([], schedule, "local", "standardNCFamily", "LowPriority", inside) is None
    assert schedule.upcoming(inside, 1) == [first]  # the window in force comes first


def test_requests_are_parsed_scaled_and_bad_ones_name_their_field():
    shortage = c.parse_shortage({"family": "standarddsv2family", "seconds": 30}, FAMILIES, T0, lambda s: s / 10)
    assert shortage == c.Shortage(c.Scope("*", "standardDSv2Family", "LowPriority"), T0, at(3))
    assert c.parse_shortage({}, FAMILIES, T0, float).end is None
    for body, target in (({"family": "nope"}, "family"), ({"priority": "Spot"}, "priority"),
                         ({"seconds": 0}, "seconds"), ({"seconds": "1"}, "seconds"), ({"region": ""}, "region"),
                         ({"gpus": 1}, "gpus"), ([], "body")):
        with pytest.raises(ValidationFailed) as error:
            c.parse_shortage(body, FAMILIES, T0, float)
        assert error.value.target == target
    with pytest.raises(ValidationFailed) as error:
        c.parse_policy({"every": 10, "seed": 1.5}, FAMILIES)
    assert error.value.target == "seed"


def test_a_policy_without_a_seed_gets_one_kept_and_is_scaled_into_a_schedule():
    policy = c.parse_policy({"every": 100, "for": 10, "priority": "Dedicated"}, FAMILIES)
    seeded = c.with_seed(policy, random.Random(1))
    assert seeded.seed is not None and c.with_seed(seeded, random.Random(2)) == seeded
    assert c.Policy.from_row(seeded.to_row()) == seeded
    schedule = c.schedule_of(seeded, seeded.seed, T0, lambda s: s / 10)
    assert (schedule.every, schedule.length, schedule.scope.priority) == (10.0, 1.0, "Dedicated")
    assert c.schedule_of(c.parse_policy({"every": None}, FAMILIES), 1, T0, float) is None


def test_azures_allocation_error_names_the_priority():
    error = c.short_error("LowPriority")["error"]
    assert error["code"] == "AllocationFailed"
    assert error["message"].startswith("Desired number of low priority nodes could not be allocated. Allocation "
                                       "failed. We do not have sufficient capacity for the requested VM size")
    assert "dedicated nodes" in c.short_error("Dedicated")["error"]["message"]


def test_the_planner_asks_for_the_nodes_but_adds_none_while_capacity_is_short_and_keeps_the_ones_it_has():
    running = [NodeView("a", NodeState.RUNNING, None)]
    scale = ScaleSettings(0, 4, 120.0)
    plan = cluster.plan_scale(running, demand=2, scale=scale, now=T0, idle_seconds=120, available=False)
    assert (plan.add, plan.target, plan.short, plan.held_back, plan.remove) == (0, 3, 2, 0, ())
    assert cluster.allocation_state([NodeState.RUNNING], plan.target) == "Resizing"
    quota_first = cluster.plan_scale(running, demand=3, scale=scale, now=T0, idle_seconds=120, room=1, available=False)
    assert (quota_first.add, quota_first.target, quota_first.short, quota_first.held_back) == (0, 2, 1, 2)
    back = cluster.plan_scale(running, demand=2, scale=scale, now=T0, idle_seconds=120)
    assert (back.add, back.target, back.short) == (2, 3, 0)
