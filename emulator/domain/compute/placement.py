"""A cluster whose nodes are spread over attached hosts: which hosts it may use (its host pool, a tag on the
cluster naming attached VirtualMachine computes of its workspace), which engine gets each new node, and which
nodes a lost host takes with it. Each host's own Docker engine places and runs the containers; this only picks
the engine, as a remote-engine setup does. Pure.
"""

import re
from collections.abc import Mapping
from dataclasses import dataclass

from emulator.errors import ValidationFailed

POOL_TAG = "amlemu.hostPool"  # on an AmlCompute: "vm-a,vm-b", the attached hosts its nodes run on
LOCAL = ""  # the emulator's own engine, where every node runs unless its cluster names a pool
_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9-]{1,31}$")  # Azure's compute names


def pool_of(tags: Mapping[str, str] | None) -> tuple[str, ...]:
    """The host pool a cluster's tags name, in their order, without repeats; () when none is named. Names only:
    whether each is an attached host of the workspace is the service's question."""
    raw = (tags or {}).get(POOL_TAG)
    if raw is None:
        return ()
    target = f"tags.{POOL_TAG}"
    if not isinstance(raw, str) or not raw.strip():
        raise ValidationFailed(f"{target} must name attached VirtualMachine computes, separated by commas: "
                               f"got {raw!r}.", target=target)
    names = [name.strip() for name in raw.split(",")]
    bad = [name for name in names if not _NAME.match(name)]
    if bad:
        raise ValidationFailed(f"{target} names {bad[0]!r}, which is not a compute name (2 to 32 letters, digits "
                               "and hyphens, starting with a letter).", target=target)
    return tuple(dict.fromkeys(names))


@dataclass(frozen=True)
class HostView:
    name: str
    reachable: bool
    cpus: float  # what its engine reports (docker info)
    nodes: int  # the emulator's node containers on it now, of every cluster


def place(hosts: list[HostView], count: int) -> list[str]:
    """A host for each of `count` new nodes: the reachable one with the fewest nodes per CPU, one node at a time
    so that a batch spreads (ties by name, so the choice is stable). Fewer than `count` names, none at all, when
    no host is reachable: those nodes wait for one."""
    load = {h.name: h.nodes for h in hosts if h.reachable}
    cpus = {h.name: max(h.cpus, 1.0) for h in hosts}
    chosen: list[str] = []
    for _ in range(count if load else 0):
        host = min(sorted(load), key=lambda name: load[name] / cpus[name])
        load[host] += 1
        chosen.append(host)
    return chosen


def lost(hosts: list[HostView], node_hosts: Mapping[str, str]) -> list[str]:
    """The nodes (node id -> its host) on hosts that cannot be reached: unusable at once, their jobs requeued,
    as for a node that died. A node on a host no longer attached is lost too."""
    reachable = {h.name for h in hosts if h.reachable} | {LOCAL}
    return sorted(node for node, host in node_hosts.items() if host not in reachable)
