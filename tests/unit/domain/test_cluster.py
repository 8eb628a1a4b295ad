"""Pure cluster rules: spec parsing, scale planning, allocation state and node counts.

Time is always passed in; every test uses fixed datetimes.
"""

import dataclasses
from datetime import UTC, datetime, timedelta

import pytest

from emulator.domain.compute import cluster, vm_sizes
from emulator.domain.compute.cluster import (
    COUNT_KEYS,
    DEFAULT_IDLE_SECONDS,
    NodeState,
    NodeView,
    ScalePlan,
    ScaleSettings,
    allocation_state,
    node_state_counts,
    parse_scale,
    parse_spec,
    plan_scale,
)
from emulator.errors import ValidationFailed

NOW = datetime(2025, 1, 1, 12, 0, 0, tzinfo=UTC)
IDLE_TIMEOUT = 120.0
SCALE_TARGET = "properties.properties.scaleSettings"

P, I, R = NodeState.PREPARING, NodeState.IDLE, NodeState.RUNNING
L, U, E = NodeState.LEAVING, NodeState.UNUSABLE, NodeState.PREEMPTED


def node(node_id: str, state: NodeState, idle_for: float | None = None) -> NodeView:
    """A node; idle nodes carry how many seconds before NOW they became idle."""
    idle_since = NOW - timedelta(seconds=idle_for) if idle_for is not None else None
    return NodeView(node_id, state, idle_since)


# --------------------------------------------------------------------------------------------------------
# plan_scale
# --------------------------------------------------------------------------------------------------------

PLAN_CASES = [
    # (id, nodes, demand, (min, max), expected ScalePlan)
    ("empty cluster stays empty", [], 0, (0, 4), ScalePlan(add=0, remove=(), target=0)),
    ("empty cluster scales up to min", [], 0, (2, 4), ScalePlan(add=2, remove=(), target=2)),
    ("min counts preparing nodes", [node("a", P)], 0, (2, 4), ScalePlan(add=1, remove=(), target=2)),
    ("demand adds nodes", [], 3, (0, 4), ScalePlan(add=3, remove=(), target=3)),
    ("demand clamps to max", [], 10, (0, 4), ScalePlan(add=4, remove=(), target=4)),
    ("demand clamps to max with nodes already there", [node("a", R), node("b", P)], 10, (0, 3),
     ScalePlan(add=1, remove=(), target=3)),
    ("demand on top of running nodes", [node("a", R)], 2, (0, 4), ScalePlan(add=2, remove=(), target=3)),
    ("preparing nodes already cover demand", [node("a", P), node("b", P)], 2, (0, 4),
     ScalePlan(add=0, remove=(), target=2)),
    ("idle nodes cover demand, none leave", [node("a", I, 500), node("b", I, 500)], 2, (0, 4),
     ScalePlan(add=0, remove=(), target=2)),
    ("demand below min still scales to min", [], 1, (3, 4), ScalePlan(add=3, remove=(), target=3)),
    ("inactive nodes are replaced", [node("a", U), node("b", E), node("c", L)], 2, (0, 4),
     ScalePlan(add=2, remove=(), target=2)),
    # Idle timeout.
    ("idle node younger than the timeout stays", [node("a", I, 119.999)], 0, (0, 4),
     ScalePlan(add=0, remove=(), target=1)),
    ("idle node at exactly the timeout leaves", [node("a", I, 120)], 0, (0, 4),
     ScalePlan(add=0, remove=("a",), target=0)),
    ("idle node past the timeout leaves", [node("a", I, 121)], 0, (0, 4),
     ScalePlan(add=0, remove=("a",), target=0)),
    ("only the timed-out idle nodes leave", [node("a", I, 10), node("b", I, 300), node("c", I, 60)],
     0, (0, 4),
     ScalePlan(add=0, remove=("b",), target=2)),
    ("idle node with no idle_since never times out", [node("a", I)], 0, (0, 4),
     ScalePlan(add=0, remove=(), target=1)),
    ("min keeps timed-out idle nodes", [node("a", I, 999), node("b", I, 999)], 0, (2, 4),
     ScalePlan(add=0, remove=(), target=2)),
    ("min keeps some timed-out idle nodes, longest idle leave first",
     [node("a", I, 200), node("b", I, 900), node("c", I, 500)], 0, (1, 4),
     ScalePlan(add=0, remove=("b", "c"), target=1)),
    ("longest idle first among timed-out nodes", [node("x", I, 130), node("y", I, 1000), node("z", I, 400)],
     1, (0, 4), ScalePlan(add=0, remove=("y", "z"), target=1)),
    # Never a running or preparing node.
    ("running nodes never leave, even with no demand", [node("a", R), node("b", R)], 0, (0, 4),
     ScalePlan(add=0, remove=(), target=2)),
    ("preparing nodes never leave, even with no demand", [node("a", P), node("b", P)], 0, (0, 4),
     ScalePlan(add=0, remove=(), target=2)),
    ("only the idle node leaves beside running and preparing",
     [node("a", R), node("b", P), node("c", I, 600)],
     0, (0, 4), ScalePlan(add=0, remove=("c",), target=2)),
    # Above maxNodeCount (max lowered by an update): idle nodes leave at once, longest idle first.
    ("idle nodes above max leave at once",
     [node("a", I, 5), node("b", I, 50), node("c", I, 1), node("d", I, 20)],
     0, (0, 2), ScalePlan(add=0, remove=("b", "d"), target=2)),
    ("above max: fresh idle leave, timed-out ones too", [node("a", I, 5), node("b", I, 500), node("c", I, 1)],
     0, (0, 1), ScalePlan(add=0, remove=("b", "a"), target=1)),
    ("above max with demand: excess idle leave at once", [node("a", I, 1), node("b", I, 2), node("c", I, 3)],
     5, (0, 2), ScalePlan(add=0, remove=("c",), target=2)),
    ("above max: running nodes stay, idle ones leave",
     [node("a", R), node("b", R), node("c", R), node("d", I, 1)],
     0, (0, 2), ScalePlan(add=0, remove=("d",), target=3)),
    ("above max with only running nodes removes nothing", [node("a", R), node("b", R), node("c", R)],
     0, (0, 1),
     ScalePlan(add=0, remove=(), target=3)),
    ("above max with only preparing nodes removes nothing", [node("a", P), node("b", P)], 0, (0, 1),
     ScalePlan(add=0, remove=(), target=2)),
    ("above max but min keeps them: min wins", [node("a", I, 1), node("b", I, 1), node("c", I, 1)], 0, (2, 2),
     ScalePlan(add=0, remove=("a",), target=2)),
    ("inactive nodes do not count toward max", [node("a", L), node("b", U), node("c", I, 1)], 0, (0, 1),
     ScalePlan(add=0, remove=(), target=1)),
]


@pytest.mark.parametrize("nodes,demand,bounds,expected",
                         [pytest.param(*case[1:], id=case[0]) for case in PLAN_CASES])
def test_plan_scale(nodes, demand, bounds, expected):
    scale = ScaleSettings(min_nodes=bounds[0], max_nodes=bounds[1], idle_seconds=IDLE_TIMEOUT)
    assert plan_scale(nodes, demand, scale, NOW, IDLE_TIMEOUT) == expected


@pytest.mark.parametrize("nodes,demand,bounds,expected",
                         [pytest.param(*case[1:], id=case[0]) for case in PLAN_CASES])
def test_plan_scale_invariants(nodes, demand, bounds, expected):
    scale = ScaleSettings(min_nodes=bounds[0], max_nodes=bounds[1], idle_seconds=IDLE_TIMEOUT)
    plan = plan_scale(nodes, demand, scale, NOW, IDLE_TIMEOUT)
    by_id = {n.node_id: n for n in nodes}
    active = [n for n in nodes if n.state in cluster.ACTIVE]
    assert plan.add == 0 or plan.remove == (), "a plan never adds and removes at once"
    assert len(set(plan.remove)) == len(plan.remove)
    assert all(by_id[r].state == NodeState.IDLE for r in plan.remove), "only idle nodes are removed"
    assert plan.target == len(active) + plan.add - len(plan.remove)
    assert plan.target >= scale.min_nodes
    if plan.add:
        assert plan.target <= scale.max_nodes


def test_plan_scale_uses_the_idle_seconds_argument_not_the_spec():
    """The idle timeout comes in already time-scaled: the spec's own value is not used."""
    nodes = [node("a", I, 30)]
    scale = ScaleSettings(min_nodes=0, max_nodes=4, idle_seconds=3600)
    assert plan_scale(nodes, 0, scale, NOW, idle_seconds=30).remove == ("a",)
    assert plan_scale(nodes, 0, scale, NOW, idle_seconds=31).remove == ()


def test_plan_scale_time_moves_forward():
    """The same idle node stays until the clock passes its timeout, then leaves."""
    idle_since = NOW
    nodes = [NodeView("a", I, idle_since)]
    scale = ScaleSettings(0, 2, IDLE_TIMEOUT)
    for elapsed, leaves in [(0, False), (60, False), (119, False), (120, True), (3600, True)]:
        plan = plan_scale(nodes, 0, scale, NOW + timedelta(seconds=elapsed), IDLE_TIMEOUT)
        assert plan.remove == (("a",) if leaves else ()), elapsed
        assert plan.target == (0 if leaves else 1)


# --------------------------------------------------------------------------------------------------------
# allocation_state and node_state_counts
# --------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("states,target,expected", [
    ([], 0, "Steady"),
    ([I, I], 2, "Steady"),
    ([R, I, R], 3, "Steady"),
    ([R, U], 1, "Steady"),  # unusable nodes are not active and do not resize
    ([R, E], 1, "Steady"),  # preempted neither
    ([], 2, "Resizing"),  # growing
    ([I], 2, "Resizing"),
    ([I, I, I], 1, "Resizing"),  # shrinking
    ([P], 1, "Resizing"),  # preparing at target still resizes
    ([R, P], 2, "Resizing"),
    ([R, L], 1, "Resizing"),  # leaving at target still resizes
    ([L], 0, "Resizing"),
    ([U, U], 0, "Steady"),
])
def test_allocation_state(states, target, expected):
    assert allocation_state(states, target) == expected


ALL_COUNT_KEYS = {"idleNodeCount", "runningNodeCount", "preparingNodeCount", "unusableNodeCount",
                  "leavingNodeCount", "preemptedNodeCount"}


@pytest.mark.parametrize("states,expected", [
    ([], {}),
    ([I], {"idleNodeCount": 1}),
    ([R, R, I], {"runningNodeCount": 2, "idleNodeCount": 1}),
    ([P, L, U, E], {"preparingNodeCount": 1, "leavingNodeCount": 1, "unusableNodeCount": 1,
                    "preemptedNodeCount": 1}),
    ([I, R, P, L, U, E, I, R, R], {"idleNodeCount": 2, "runningNodeCount": 3, "preparingNodeCount": 1,
                                   "leavingNodeCount": 1, "unusableNodeCount": 1, "preemptedNodeCount": 1}),
])
def test_node_state_counts(states, expected):
    counts = node_state_counts(states)
    assert set(counts) == ALL_COUNT_KEYS  # all six keys, always, zeros included
    assert counts == {key: expected.get(key, 0) for key in ALL_COUNT_KEYS}
    assert sum(counts.values()) == len(states)


def test_count_keys_cover_every_node_state():
    assert set(COUNT_KEYS) == set(NodeState)
    assert set(COUNT_KEYS.values()) == ALL_COUNT_KEYS


# --------------------------------------------------------------------------------------------------------
# parse_scale
# --------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("scale,expected", [
    (None, ScaleSettings(0, 1, DEFAULT_IDLE_SECONDS)),
    ({"maxNodeCount": 1}, ScaleSettings(0, 1, 120.0)),
    ({"maxNodeCount": 4}, ScaleSettings(0, 4, 120.0)),
    ({"minNodeCount": 0, "maxNodeCount": 1}, ScaleSettings(0, 1, 120.0)),
    ({"minNodeCount": 2, "maxNodeCount": 2}, ScaleSettings(2, 2, 120.0)),
    ({"minNodeCount": 1, "maxNodeCount": 5, "nodeIdleTimeBeforeScaleDown": "PT30S"},
     ScaleSettings(1, 5, 30.0)),
    ({"maxNodeCount": 3, "nodeIdleTimeBeforeScaleDown": "PT5M"}, ScaleSettings(0, 3, 300.0)),
    ({"maxNodeCount": 3, "nodeIdleTimeBeforeScaleDown": "PT1H30M"}, ScaleSettings(0, 3, 5400.0)),
    ({"maxNodeCount": 3, "nodeIdleTimeBeforeScaleDown": "P1D"}, ScaleSettings(0, 3, 86400.0)),
    ({"maxNodeCount": 3, "nodeIdleTimeBeforeScaleDown": "PT0S"}, ScaleSettings(0, 3, 0.0)),
    ({"maxNodeCount": 3, "nodeIdleTimeBeforeScaleDown": "PT1.5S"}, ScaleSettings(0, 3, 1.5)),
    ({"maxNodeCount": 3, "nodeIdleTimeBeforeScaleDown": None}, ScaleSettings(0, 3, 120.0)),
    ({"maxNodeCount": 1000}, ScaleSettings(0, 1000, 120.0)),
    ({"maxNodeCount": 3, "nodeIdleTimeBeforeScaleDown": "P3650D"},
     ScaleSettings(0, 3, 3650 * 86400.0)),  # the ten-year cap
    ({"minNodeCount": None, "maxNodeCount": 2}, ScaleSettings(0, 2, 120.0)),  # null takes the default
])
def test_parse_scale_valid(scale, expected):
    assert parse_scale(scale) == expected


def test_scale_defaults():
    default = parse_scale(None)
    assert (default.min_nodes, default.max_nodes, default.idle_seconds) == (0, 1, 120.0)
    assert default.to_arm() == {"minNodeCount": 0, "maxNodeCount": 1, "nodeIdleTimeBeforeScaleDown": "PT2M"}


BAD_SCALES = [
    # (id, scaleSettings, offending field)
    ("not an object (list)", [1, 2], SCALE_TARGET),
    ("not an object (string)", "max=2", SCALE_TARGET),
    ("not an object (int)", 3, SCALE_TARGET),
    ("maxNodeCount missing", {"minNodeCount": 0}, f"{SCALE_TARGET}.maxNodeCount"),
    ("maxNodeCount null", {"maxNodeCount": None}, f"{SCALE_TARGET}.maxNodeCount"),
    ("min greater than max", {"minNodeCount": 3, "maxNodeCount": 2}, f"{SCALE_TARGET}.minNodeCount"),
    ("negative min", {"minNodeCount": -1, "maxNodeCount": 2}, f"{SCALE_TARGET}.minNodeCount"),
    ("negative max", {"minNodeCount": 0, "maxNodeCount": -2}, f"{SCALE_TARGET}.maxNodeCount"),
    ("max zero", {"maxNodeCount": 0}, f"{SCALE_TARGET}.maxNodeCount"),
    ("max bool", {"maxNodeCount": True}, f"{SCALE_TARGET}.maxNodeCount"),
    ("min bool", {"minNodeCount": False, "maxNodeCount": 2}, f"{SCALE_TARGET}.minNodeCount"),
    ("max float", {"maxNodeCount": 2.0}, f"{SCALE_TARGET}.maxNodeCount"),
    ("min float", {"minNodeCount": 0.5, "maxNodeCount": 2}, f"{SCALE_TARGET}.minNodeCount"),
    ("max string", {"maxNodeCount": "2"}, f"{SCALE_TARGET}.maxNodeCount"),
    ("min string", {"minNodeCount": "0", "maxNodeCount": 2}, f"{SCALE_TARGET}.minNodeCount"),
    ("max list", {"maxNodeCount": [2]}, f"{SCALE_TARGET}.maxNodeCount"),
    ("idle not a string", {"maxNodeCount": 2, "nodeIdleTimeBeforeScaleDown": 120},
     f"{SCALE_TARGET}.nodeIdleTimeBeforeScaleDown"),
    ("idle plain number string", {"maxNodeCount": 2, "nodeIdleTimeBeforeScaleDown": "120"},
     f"{SCALE_TARGET}.nodeIdleTimeBeforeScaleDown"),
    ("idle garbage", {"maxNodeCount": 2, "nodeIdleTimeBeforeScaleDown": "two minutes"},
     f"{SCALE_TARGET}.nodeIdleTimeBeforeScaleDown"),
    ("idle bare P", {"maxNodeCount": 2, "nodeIdleTimeBeforeScaleDown": "P"},
     f"{SCALE_TARGET}.nodeIdleTimeBeforeScaleDown"),
    ("idle missing T", {"maxNodeCount": 2, "nodeIdleTimeBeforeScaleDown": "P5M5S"},
     f"{SCALE_TARGET}.nodeIdleTimeBeforeScaleDown"),
    ("idle in years", {"maxNodeCount": 2, "nodeIdleTimeBeforeScaleDown": "P1Y"},
     f"{SCALE_TARGET}.nodeIdleTimeBeforeScaleDown"),
    ("idle in months", {"maxNodeCount": 2, "nodeIdleTimeBeforeScaleDown": "P1M"},
     f"{SCALE_TARGET}.nodeIdleTimeBeforeScaleDown"),
    ("idle negative", {"maxNodeCount": 2, "nodeIdleTimeBeforeScaleDown": "-PT5S"},
     f"{SCALE_TARGET}.nodeIdleTimeBeforeScaleDown"),
    ("idle hh:mm:ss", {"maxNodeCount": 2, "nodeIdleTimeBeforeScaleDown": "00:02:00"},
     f"{SCALE_TARGET}.nodeIdleTimeBeforeScaleDown"),
    ("idle over ten years", {"maxNodeCount": 2, "nodeIdleTimeBeforeScaleDown": "P3651D"},
     f"{SCALE_TARGET}.nodeIdleTimeBeforeScaleDown"),
]


@pytest.mark.parametrize("scale,target", [pytest.param(*case[1:], id=case[0]) for case in BAD_SCALES])
def test_parse_scale_rejects(scale, target):
    with pytest.raises(ValidationFailed) as info:
        parse_scale(scale)
    assert info.value.target == target
    assert info.value.status == 400 and info.value.code == "ValidationError"
    assert target.rsplit(".", 1)[-1] in info.value.message


@pytest.mark.parametrize("scale,target", [pytest.param(*case[1:], id=case[0]) for case in BAD_SCALES])
def test_parse_spec_rejects_bad_scale_with_the_same_target(scale, target):
    with pytest.raises(ValidationFailed) as info:
        parse_spec({"vmSize": "Standard_DS3_v2", "scaleSettings": scale})
    assert info.value.target == target


@pytest.mark.parametrize("idle", ["P99999999999D", "PT99999999999999999999S", "P1000000000D"])
def test_huge_idle_duration_is_a_validation_error(idle):
    with pytest.raises(ValidationFailed) as info:
        parse_scale({"maxNodeCount": 2, "nodeIdleTimeBeforeScaleDown": idle})
    assert info.value.target == f"{SCALE_TARGET}.nodeIdleTimeBeforeScaleDown"


@pytest.mark.parametrize("idle", ["PT0S", "PT1S", "PT30S", "PT120S", "PT1.5S", "PT15M", "PT1H", "P1D",
                                  "PT999999S"])
def test_to_arm_round_trips_small_idle_times(idle):
    scale = parse_scale({"minNodeCount": 1, "maxNodeCount": 3, "nodeIdleTimeBeforeScaleDown": idle})
    assert parse_scale(scale.to_arm()) == scale


@pytest.mark.parametrize("idle", ["PT1000000S", "P30D", "PT1234567S"])
def test_to_arm_round_trips_long_idle_times(idle):
    scale = parse_scale({"maxNodeCount": 3, "nodeIdleTimeBeforeScaleDown": idle})
    assert parse_scale(scale.to_arm()) == scale


# --------------------------------------------------------------------------------------------------------
# parse_spec
# --------------------------------------------------------------------------------------------------------

def test_parse_spec_defaults():
    spec = parse_spec({})
    assert spec.vm_size.name == "Standard_DS3_v2"
    assert spec.priority == "Dedicated" and not spec.low_priority
    assert spec.scale == ScaleSettings(0, 1, 120.0)


@pytest.mark.parametrize("props,size,priority,scale", [
    ({"vmSize": "Standard_NC6"}, "Standard_NC6", "Dedicated", ScaleSettings()),
    ({"vmSize": "standard_ds3_v2"}, "Standard_DS3_v2", "Dedicated", ScaleSettings()),  # case-insensitive
    ({"vmSize": "STANDARD_D2_V3", "vmPriority": "LowPriority"}, "Standard_D2_v3", "LowPriority",
     ScaleSettings()),
    ({"vmSize": None, "vmPriority": None}, "Standard_DS3_v2", "Dedicated", ScaleSettings()),
    ({"vmSize": "Standard_F4s_v2", "scaleSettings": {"minNodeCount": 1, "maxNodeCount": 3,
                                                    "nodeIdleTimeBeforeScaleDown": "PT60S"}},
     "Standard_F4s_v2", "Dedicated", ScaleSettings(1, 3, 60.0)),
])
def test_parse_spec_valid(props, size, priority, scale):
    spec = parse_spec(props)
    assert spec.vm_size.name == size
    assert spec.priority == priority
    assert spec.low_priority == (priority == "LowPriority")
    assert spec.scale == scale


@pytest.mark.parametrize("props,target", [
    pytest.param({"vmSize": "Standard_Imaginary_v9"}, "properties.properties.vmSize", id="unknown vmSize"),
    pytest.param({"vmSize": "Standard_DS3_v2 extra"}, "properties.properties.vmSize", id="vmSize with junk"),
    pytest.param({"vmSize": 42}, "properties.properties.vmSize", id="vmSize not a string"),
    pytest.param({"vmSize": ["Standard_DS3_v2"]}, "properties.properties.vmSize", id="vmSize list"),
    pytest.param({"vmPriority": "Spot"}, "properties.properties.vmPriority", id="vmPriority Spot"),
    pytest.param({"vmPriority": "dedicated"}, "properties.properties.vmPriority", id="vmPriority wrong case"),
    pytest.param({"vmPriority": 1}, "properties.properties.vmPriority", id="vmPriority number"),
    pytest.param({"vmPriority": ["Dedicated"]}, "properties.properties.vmPriority", id="vmPriority list"),
])
def test_parse_spec_rejects(props, target):
    with pytest.raises(ValidationFailed) as info:
        parse_spec(props)
    assert info.value.target == target


def test_unknown_vm_size_message_names_the_size():
    with pytest.raises(ValidationFailed) as info:
        parse_spec({"vmSize": "Standard_Imaginary_v9"})
    assert "Standard_Imaginary_v9" in info.value.message


def test_low_priority_needs_a_capable_size(monkeypatch):
    incapable = dataclasses.replace(vm_sizes.find("Standard_DS3_v2"), low_priority_capable=False)
    monkeypatch.setattr(vm_sizes, "find", lambda name: incapable)
    assert parse_spec({"vmSize": "Standard_DS3_v2"}).priority == "Dedicated"
    with pytest.raises(ValidationFailed) as info:
        parse_spec({"vmSize": "Standard_DS3_v2", "vmPriority": "LowPriority"})
    assert info.value.target == "properties.properties.vmPriority"


@pytest.mark.parametrize("field,value", [
    ("vmSize", ""), ("vmSize", 0), ("vmSize", False), ("vmSize", []),
    ("vmPriority", ""), ("vmPriority", 0), ("vmPriority", False), ("vmPriority", {}),
])
def test_falsy_vm_fields_are_rejected(field, value):
    with pytest.raises(ValidationFailed) as info:
        parse_spec({field: value})
    assert info.value.target == f"properties.properties.{field}"
