"""Rollout decisions: start, drain, remove, settled."""

from datetime import UTC, datetime, timedelta

from emulator.domain.serving.rollout import Instance, plan

NOW = datetime(2026, 1, 1, tzinfo=UTC)


def inst(name, generation=1, running=True, ready=True, draining=None):
    return Instance(name, generation, running, ready, draining)


def test_a_new_deployment_starts_its_capacity():
    step = plan([], 1, 3, NOW)
    assert step.start == 3 and not step.settled


def test_settled_when_capacity_is_ready():
    step = plan([inst("a"), inst("b")], 1, 2, NOW)
    assert (step.start, step.drain, step.remove, step.settled) == (0, [], [], True)
    assert not plan([inst("a"), inst("b", ready=False)], 1, 2, NOW).settled


def test_an_exited_instance_is_removed_and_replaced():
    step = plan([inst("a"), inst("b", running=False)], 1, 2, NOW)
    assert step.remove == ["b"] and step.start == 1 and not step.settled


def test_scale_down_drains_the_surplus_then_removes_it():
    step = plan([inst("a"), inst("b", ready=False), inst("c")], 1, 1, NOW)
    assert sorted(step.drain) == ["a", "b"] and step.start == 0 and not step.settled
    draining = [inst("c"), inst("a", draining=NOW), inst("b", draining=NOW)]
    assert plan(draining, 1, 1, NOW + timedelta(seconds=1)).remove == []
    step = plan(draining, 1, 1, NOW + timedelta(seconds=3))
    assert sorted(step.remove) == ["a", "b"] and step.settled


def test_a_new_generation_replaces_the_old_only_once_ready():
    step = plan([inst("old1"), inst("old2")], 2, 2, NOW)
    assert step.start == 2 and step.drain == []
    step = plan([inst("old1"), inst("old2"), inst("new1", 2), inst("new2", 2, ready=False)], 2, 2, NOW)
    assert step.start == 0 and step.drain == []
    step = plan([inst("old1"), inst("old2"), inst("new1", 2), inst("new2", 2)], 2, 2, NOW)
    assert sorted(step.drain) == ["old1", "old2"] and not step.settled


def test_capacity_zero_drains_everything():
    step = plan([inst("a")], 1, 0, NOW)
    assert step.drain == ["a"] and not step.settled
    assert plan([], 1, 0, NOW).settled
