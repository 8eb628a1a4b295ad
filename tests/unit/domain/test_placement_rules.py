"""Spreading a cluster's nodes over attached hosts: its pool, which engine gets each new node, what a lost host
takes with it."""

import pytest

from emulator.domain.compute.placement import LOCAL, POOL_TAG, HostView, lost, place, pool_of
from emulator.errors import ValidationFailed


def test_a_cluster_without_the_tag_runs_on_the_emulators_engine():
    assert pool_of(None) == () and pool_of({"team": "a"}) == ()


def test_the_pool_is_its_names_in_order_without_repeats():
    assert pool_of({POOL_TAG: "vm-b, vm-a,vm-b"}) == ("vm-b", "vm-a")


@pytest.mark.parametrize("raw", ["", " , ", "vm-a,../x", "1vm", "vm a", "a" * 33])
def test_a_pool_that_names_no_compute_is_refused_naming_the_tag(raw):
    with pytest.raises(ValidationFailed) as refused:
        pool_of({POOL_TAG: raw})
    assert refused.value.target == f"tags.{POOL_TAG}"


def test_new_nodes_spread_over_the_reachable_hosts_one_at_a_time():
    hosts = [HostView("vm-a", True, 2, 0), HostView("vm-b", True, 2, 0), HostView("vm-c", False, 8, 0)]
    assert place(hosts, 4) == ["vm-a", "vm-b", "vm-a", "vm-b"]


def test_a_host_with_more_cpus_takes_more_nodes():
    hosts = [HostView("small", True, 1, 0), HostView("big", True, 4, 1)]
    assert place(hosts, 5).count("big") == 4


def test_a_busier_host_gets_the_next_node_last():
    assert place([HostView("vm-a", True, 2, 3), HostView("vm-b", True, 2, 1)], 2) == ["vm-b", "vm-b"]


def test_no_reachable_host_places_nothing():
    assert place([HostView("vm-a", False, 2, 0)], 3) == [] and place([], 2) == []


def test_a_lost_host_takes_its_nodes_and_the_local_engine_never_is():
    hosts = [HostView("vm-a", True, 2, 1), HostView("vm-b", False, 2, 1)]
    nodes = {"n1": "vm-a", "n2": "vm-b", "n3": LOCAL, "n4": "detached-vm"}
    assert lost(hosts, nodes) == ["n2", "n4"]
