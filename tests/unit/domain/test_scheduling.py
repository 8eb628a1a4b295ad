"""Which queued jobs go to a cluster's queue now: first come, first served, one job ahead per busy node."""

import pytest

from emulator.domain.jobs.scheduling import Admission, admit

NOW, AHEAD, WAIT = Admission.NOW, Admission.AHEAD, Admission.WAIT


@pytest.mark.parametrize(("sizes", "idle", "busy", "pending", "expected"), [
    ([1, 1], 2, 0, 0, [NOW, NOW]),  # idle nodes take jobs at once
    ([1, 1, 1], 1, 0, 0, [NOW, WAIT, WAIT]),  # nothing busy: the rest wait for nodes the autoscaler adds
    ([1, 1, 1, 1, 1, 1], 0, 2, 0, [AHEAD] * 4 + [WAIT] * 2),  # AHEAD (2) jobs ahead per busy node
    ([1, 1, 1], 1, 1, 0, [NOW, AHEAD, AHEAD]),
    ([1], 0, 2, 4, [WAIT]),  # every busy node has its next jobs already
    ([1], 1, 1, 2, [AHEAD]),  # the idle node takes a pending rank, the busy one this
    ([1], 0, 1, 0, [AHEAD]),  # a node coming up counts as busy: its first job waits in the queue for it
])
def test_one_node_jobs(sizes, idle, busy, pending, expected):
    assert admit(sizes, idle, busy, pending) == expected


def test_a_multi_node_job_goes_only_when_all_its_nodes_are_idle():
    assert admit([3], idle=3, busy=0, pending=0) == [NOW]
    assert admit([3], idle=2, busy=4, pending=0) == [WAIT]  # never ahead: ranks would hold nodes waiting
    assert admit([3], idle=3, busy=0, pending=1) == [WAIT]  # an idle node will take the pending rank first


def test_a_waiting_job_holds_back_every_job_after_it():
    assert admit([3, 1, 1], idle=1, busy=3, pending=0) == [WAIT, WAIT, WAIT]
    assert admit([1, 3, 1], idle=1, busy=3, pending=0) == [NOW, WAIT, WAIT]


def test_nothing_queued():
    assert admit([], idle=4, busy=0, pending=0) == []
