"""AmlCompute clusters: the spec a user gives, node states, and pure scaling decisions.

Time comes in as a parameter; nothing here does I/O.
"""

from collections import Counter
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum

from emulator.domain import durations
from emulator.domain.compute import local, vm_sizes
from emulator.errors import ValidationFailed

DEFAULT_IDLE_SECONDS = 120.0  # Azure's service default (semantics §1.1)
PRIORITIES = ("Dedicated", "LowPriority")


class NodeState(StrEnum):
    PREPARING = "preparing"
    IDLE = "idle"
    RUNNING = "running"
    LEAVING = "leaving"
    UNUSABLE = "unusable"
    PREEMPTED = "preempted"


ACTIVE = frozenset({NodeState.PREPARING, NodeState.IDLE, NodeState.RUNNING})
COUNT_KEYS = {
    NodeState.IDLE: "idleNodeCount", NodeState.RUNNING: "runningNodeCount",
    NodeState.PREPARING: "preparingNodeCount", NodeState.UNUSABLE: "unusableNodeCount",
    NodeState.LEAVING: "leavingNodeCount", NodeState.PREEMPTED: "preemptedNodeCount",
}


@dataclass(frozen=True)
class ScaleSettings:
    min_nodes: int = 0
    max_nodes: int = 1
    idle_seconds: float = DEFAULT_IDLE_SECONDS

    def to_arm(self) -> dict:
        return {"minNodeCount": self.min_nodes, "maxNodeCount": self.max_nodes,
                "nodeIdleTimeBeforeScaleDown": durations.format_seconds(self.idle_seconds)}


@dataclass(frozen=True)
class ClusterSpec:
    vm_size: vm_sizes.VmSize
    priority: str
    scale: ScaleSettings

    @property
    def low_priority(self) -> bool:
        return self.priority == "LowPriority"


def _count(scale: dict, key: str, default: int | None) -> int:
    value = scale.get(key)
    value = default if value is None else value
    target = f"properties.properties.scaleSettings.{key}"
    if value is None:
        raise ValidationFailed(f"{target} is required.", target=target)
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValidationFailed(f"{target} must be an integer, got {value!r}.", target=target)
    if value < 0:
        raise ValidationFailed(f"{target} must not be negative, got {value}.", target=target)
    return value


def parse_scale(scale: object) -> ScaleSettings:
    target = "properties.properties.scaleSettings"
    if scale is None:
        return ScaleSettings()
    if not isinstance(scale, dict):
        raise ValidationFailed(f"{target} must be an object.", target=target)
    min_nodes = _count(scale, "minNodeCount", 0)
    max_nodes = _count(scale, "maxNodeCount", None)
    if max_nodes < 1:
        raise ValidationFailed(f"{target}.maxNodeCount must be at least 1.", target=f"{target}.maxNodeCount")
    if min_nodes > max_nodes:
        raise ValidationFailed(
            f"{target}.minNodeCount ({min_nodes}) must not exceed maxNodeCount ({max_nodes}).",
            target=f"{target}.minNodeCount")
    idle = scale.get("nodeIdleTimeBeforeScaleDown")
    idle_seconds = DEFAULT_IDLE_SECONDS if idle is None else durations.parse_seconds(
        idle, f"{target}.nodeIdleTimeBeforeScaleDown")
    return ScaleSettings(min_nodes, max_nodes, idle_seconds)


def parse_spec(props: dict, local_capacity: bool = False) -> ClusterSpec:
    """Validate the inner `properties` of an AmlCompute PUT (`local_capacity`: the emulator's own local capacity,
    sized by its machine, which no PUT can make)."""
    size_name = props.get("vmSize")
    size_name = "Standard_DS3_v2" if size_name is None else size_name
    size = vm_sizes.find(size_name) if isinstance(size_name, str) else None
    if local_capacity and size_name == local.SIZE_NAME:  # the local capacity: the emulator's machine
        size = local.size_of(props)
    if size is None:
        raise ValidationFailed(
            f"VM size '{size_name}' is not supported. List the supported sizes with ml_client.compute.list_sizes().",
            target="properties.properties.vmSize")
    priority = props.get("vmPriority")
    priority = "Dedicated" if priority is None else priority
    if priority not in PRIORITIES:
        raise ValidationFailed(f"vmPriority must be one of {', '.join(PRIORITIES)}, got {priority!r}.",
                               target="properties.properties.vmPriority")
    if priority == "LowPriority" and not size.low_priority_capable:
        raise ValidationFailed(f"VM size {size.name} cannot be low priority.",
                               target="properties.properties.vmPriority")
    return ClusterSpec(size, priority, parse_scale(props.get("scaleSettings")))


@dataclass(frozen=True)
class NodeView:
    node_id: str
    state: NodeState
    idle_since: datetime | None


@dataclass(frozen=True)
class ScalePlan:
    add: int
    remove: tuple[str, ...]
    target: int
    held_back: int = 0  # nodes queued work wanted that the quota did not allow
    short: int = 0  # nodes within the quota that a capacity shortage kept from being allocated


def plan_scale(nodes: list[NodeView], demand: int, scale: ScaleSettings, now: datetime,
               idle_seconds: float, room: int | None = None, available: bool = True) -> ScalePlan:
    """Decide how many nodes to add and which idle nodes leave.

    `demand` is the number of nodes queued work needs beyond the nodes already running it;
    `idle_seconds` is the idle timeout in real seconds (after the time scale); `room`: how many more nodes the
    core quota allows (None: no limit). A scale-up the quota cuts short adds what fits and says how many it held back.
    `available` False: Azure has no capacity for the cluster's VMs now (domain/compute/capacity.py); the nodes the
    quota allows are asked for (the target, so the cluster shows Resizing) but none is added. Quota comes first, as
    on Azure: what it holds back is never asked for.
    """
    active = [n for n in nodes if n.state in ACTIVE]
    busy = sum(n.state == NodeState.RUNNING for n in active)
    wanted = max(scale.min_nodes, min(scale.max_nodes, busy + demand))
    if len(active) < wanted:
        fits = wanted - len(active) if room is None else min(wanted - len(active), room)
        add = fits if available else 0
        return ScalePlan(add=add, remove=(), target=len(active) + fits, held_back=wanted - len(active) - fits,
                         short=fits - add)
    # Idle nodes leave longest-idle first: at once while above maxNodeCount, else after the idle timeout.
    idle = sorted((n for n in active if n.state == NodeState.IDLE), key=lambda n: n.idle_since or now)
    over_max = len(active) - scale.max_nodes
    remove = tuple(n.node_id for i, n in enumerate(idle)
                   if i < over_max or (now - (n.idle_since or now)).total_seconds() >= idle_seconds
                   )[: len(active) - wanted]
    return ScalePlan(add=0, remove=remove, target=len(active) - len(remove))


def node_state_counts(states: list[NodeState]) -> dict:
    counts = Counter(states)
    return {key: counts.get(state, 0) for state, key in COUNT_KEYS.items()}


def current_count(states: list[NodeState]) -> int:
    """currentNodeCount: nodes that are, or are becoming, part of the cluster."""
    return sum(s in ACTIVE for s in states)


def allocation_state(states: list[NodeState], target: int) -> str:
    current = current_count(states)
    resizing = current != target or any(s in (NodeState.PREPARING, NodeState.LEAVING) for s in states)
    return "Resizing" if resizing else "Steady"
