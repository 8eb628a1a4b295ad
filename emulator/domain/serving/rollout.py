"""What a deployment's model servers should do next: start, drain, remove. Pure: the controller observes,
this decides, the controller carries it out.

Requests must not fail while instances come and go, so an instance leaves in two steps: it is first drained
(taken out of the router's table, still running) and removed once the router has let go of it. A new
generation (an update that changes the spec) comes up beside the old one, and the old one drains only when
the new one is fully ready: a rolling replacement with no moment without ready instances.
"""

from dataclasses import dataclass, field
from datetime import datetime

DRAIN_SECONDS = 2.0  # longer than the router's refresh and a request's usual time


@dataclass(frozen=True)
class Instance:
    name: str
    generation: int
    running: bool
    ready: bool
    draining_since: datetime | None = None


@dataclass
class Step:
    start: int = 0  # new instances of the current generation
    drain: list[str] = field(default_factory=list)
    remove: list[str] = field(default_factory=list)
    settled: bool = False  # exactly `capacity` ready instances of the current generation, nothing else


def plan(instances: list[Instance], generation: int, capacity: int, now: datetime,
         drain_seconds: float = DRAIN_SECONDS) -> Step:
    step = Step()
    live = []
    for instance in instances:
        if not instance.running:
            step.remove.append(instance.name)
        elif instance.draining_since is not None:
            if (now - instance.draining_since).total_seconds() >= drain_seconds:
                step.remove.append(instance.name)
        else:
            live.append(instance)
    current = [i for i in live if i.generation == generation]
    older = [i for i in live if i.generation != generation]
    step.start = max(0, capacity - len(current))
    # Scale down: the surplus goes, not-ready ones first.
    surplus = sorted(current, key=lambda i: (i.ready, i.name))[:max(0, len(current) - capacity)]
    step.drain += [i.name for i in surplus]
    ready = sum(1 for i in current if i.ready and i not in surplus)
    if ready >= capacity:
        step.drain += [i.name for i in older]
    waiting = [i for i in instances if i.draining_since is not None and i.name not in step.remove]
    step.settled = ready >= capacity and not older and not surplus and not waiting and step.start == 0
    return step
