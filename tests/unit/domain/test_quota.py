"""Pure quota rules: how many nodes fit under the family, total and low-priority quotas, Azure's messages, the
override a PUT merges, and the scale planner held to the room the quota leaves. Time is passed in."""

from datetime import UTC, datetime

import pytest

from emulator.domain.compute import quota, vm_sizes
from emulator.domain.compute.cluster import NodeState, NodeView, ScaleSettings, plan_scale
from emulator.domain.compute.quota import Limits, Usage
from emulator.errors import ValidationFailed

NOW = datetime(2025, 1, 1, 12, 0, 0, tzinfo=UTC)
DS3 = vm_sizes.find("Standard_DS3_v2")  # 4 vCPUs, standardDSv2Family
NC6 = vm_sizes.find("Standard_NC6")  # a GPU size


def test_azures_defaults_fit_six_ds3_nodes_no_gpu_node_and_twenty_five_low_priority_ones():
    assert quota.most_nodes(Limits(), DS3, low_priority=False)[0] == 6
    fits, binding = quota.most_nodes(Limits(), NC6, low_priority=False)
    assert fits == 0 and binding.quota == NC6.family and binding.limit == 0
    assert quota.most_nodes(Limits(), DS3, low_priority=True)[0] == 25


def test_the_tightest_quota_binds_a_family_or_the_regional_total():
    limits = Limits(family=24, total_dedicated=40, families={"standardDSv2Family": 100})
    used = Usage({"standardDSv2Family": 8, "standardDv3Family": 24}, 0)
    fits, binding = quota.room(limits, used, DS3, low_priority=False)
    assert (fits, binding.quota, binding.used) == (2, quota.TOTAL_DEDICATED, 32)
    fits, binding = quota.room(Limits(), Usage({"standardDSv2Family": 22}, 0), DS3, low_priority=False)
    assert (fits, binding.quota, binding.label) == (0, "standardDSv2Family", "Standard DSv2 family")


def test_low_priority_is_one_quota_across_families_apart_from_dedicated():
    used = Usage({"standardDSv2Family": 24}, 96)
    fits, binding = quota.room(Limits(), used, DS3, low_priority=True)
    assert (fits, binding.quota, binding.used) == (1, quota.TOTAL_LOW_PRIORITY, 96)


def test_messages_say_it_as_azure_does():
    _, binding = quota.room(Limits(), Usage({"standardDSv2Family": 24}, 0), DS3, low_priority=False)
    text = quota.shortfall_message(binding, DS3)
    assert text.startswith("The specified subscription has a Standard DSv2 family vCPU quota of 24 (24 in use) and "
                           "cannot accomodate for at least 1 requested managed compute nodes which maps to 4 vCPUs.")
    assert quota.wait_error(binding, DS3, "workspace")["error"]["code"] == "QuotaExceeded"
    warning = quota.over_max_warning(10, 6, binding, DS3)["error"]
    assert warning["code"] == "ClusterMaxNodesExceedCoreQuota" and "can only grow to 6 nodes" in warning["message"]
    assert quota.family_label("Standard NCASv3_T4 Family") == "Standard NCASv3_T4 family"


def test_an_override_merges_and_null_goes_back_to_the_default():
    families = {"standardDSv2Family", "standardNCFamily"}
    first = quota.parse_override({"families": {"standardDSv2Family": 48}, "lowPriorityCores": 10}, None, families)
    assert first == {"families": {"standardDSv2Family": 48}, "lowPriorityCores": 10}
    second = quota.parse_override({"families": {"standardDSv2Family": None}, "totalDedicatedCores": 96}, first,
                                  families)
    assert second == {"lowPriorityCores": 10, "totalDedicatedCores": 96}
    limits = Limits().overlay(first)
    assert (limits.of_family("standardDSv2Family", False), limits.low_priority, limits.total_dedicated) == (48, 10, 24)


@pytest.mark.parametrize(("body", "target"), [
    ({"lowPriorityCores": -1}, "lowPriorityCores"), ({"totalDedicatedCores": "many"}, "totalDedicatedCores"),
    ({"families": {"nope": 4}}, "families.nope"), ({"families": []}, "families"), ({"cores": 4}, "cores"),
    ({}, "body"), ([], "body"), ({"lowPriorityCores": True}, "lowPriorityCores")])
def test_a_bad_override_names_its_field(body, target):
    with pytest.raises(ValidationFailed) as raised:
        quota.parse_override(body, None, {"standardDSv2Family"})
    assert raised.value.target == target


def _views(*states: NodeState) -> list[NodeView]:
    return [NodeView(f"n{i}", state, NOW if state == NodeState.IDLE else None) for i, state in enumerate(states)]


def test_the_planner_adds_only_what_the_quota_leaves_and_says_how_many_it_held_back():
    scale = ScaleSettings(min_nodes=0, max_nodes=10)
    plan = plan_scale(_views(NodeState.RUNNING), demand=5, scale=scale, now=NOW, idle_seconds=120, room=2)
    assert (plan.add, plan.target, plan.held_back) == (2, 3, 3)
    plan = plan_scale(_views(NodeState.RUNNING), demand=5, scale=scale, now=NOW, idle_seconds=120, room=0)
    assert (plan.add, plan.target, plan.held_back) == (0, 1, 5)
    plan = plan_scale([], demand=2, scale=scale, now=NOW, idle_seconds=120, room=9)
    assert (plan.add, plan.held_back) == (2, 0)
    assert plan_scale([], demand=2, scale=scale, now=NOW, idle_seconds=120).held_back == 0  # no quota given


def test_a_quota_never_makes_the_planner_remove_nodes():
    scale = ScaleSettings(min_nodes=2, max_nodes=4)
    plan = plan_scale(_views(NodeState.IDLE, NodeState.IDLE), demand=0, scale=scale, now=NOW, idle_seconds=0, room=0)
    assert (plan.add, plan.remove, plan.held_back) == (0, (), 0)
