"""Which of a cluster's queued jobs go to its queue now: first come, first served. Pure.

A job is sent when nodes will take it as soon as they can: a multi-node job only when enough nodes are idle
for all its ranks at once (gang scheduling); a one-node job also while every node is busy or still coming
up, up to AHEAD jobs per such node, so that the next free node finds its next job already waiting, its
container started (which takes a node's queue a while to catch up with under load, hence more than one).
A job that must wait holds back every job after it.
"""

from enum import StrEnum

AHEAD = 2


class Admission(StrEnum):
    NOW = "now"  # an idle node takes it
    AHEAD = "ahead"  # the next node to be free takes it
    WAIT = "wait"


def admit(sizes: list[int], idle: int, busy: int, pending: int) -> list[Admission]:
    """One decision per queued job (`sizes`: their instance counts, oldest first).

    `idle`: nodes with nothing to do; `busy`: nodes running a job or coming up; `pending`: ranks sent
    earlier that no node has taken yet."""
    decisions: list[Admission] = []
    for size in sizes:
        if decisions and decisions[-1] == Admission.WAIT:
            decisions.append(Admission.WAIT)
        elif size <= idle - pending:
            decisions.append(Admission.NOW)
            pending += size
        elif size == 1 and pending < idle + AHEAD * busy:
            decisions.append(Admission.AHEAD)
            pending += 1
        else:
            decisions.append(Admission.WAIT)
    return decisions
