"""Capacity shortages: Azure out of VMs of a family in a region, most often of low-priority ones. Quota is a credit
limit, never a capacity guarantee (how-to-manage-quotas.md): a cluster within its quota may still get no nodes. Its
queued jobs wait, and it grows once capacity returns; nodes it has already are not touched (a shortage is not a
preemption). Pure: time and randomness come in as parameters; services/capacity.py keeps the state.

A shortage covers (region, VM family, priority), "*" for every region or family, LowPriority unless Dedicated is
asked for, from `start` until `end` (None: until restored). A seeded schedule draws shortages at random: gaps and
lengths exponential with the means given, the same windows for the same seed (as preemption's Timeline does).
"""

import math
import random
from collections.abc import Iterator
from dataclasses import dataclass, replace
from datetime import datetime, timedelta

from emulator.errors import ValidationFailed

ALL = "*"
PRIORITIES = ("LowPriority", "Dedicated")
# What an AmlCompute cluster's `errors` carries while Azure cannot allocate its nodes. AmlCompute clusters are Azure
# Batch pools underneath: Batch's pool resize error is `AllocationFailed`, "Desired number of low priority nodes could
# not be allocated" (Batch PoolResizeErrorCodes; quoted from a resize error in Azure/doAzureParallel#349), and the
# relayed VM allocation error says why ("Allocation failed. We do not have sufficient capacity for the requested VM
# size in this region...", learn.microsoft.com troubleshoot/azure/virtual-machines/allocation-failure; Azure/AKS#1272).
SHORT_CODE = "AllocationFailed"
GUIDANCE = "http://aka.ms/allocation-guidance"
MANY_WINDOWS = 100_000  # a schedule looked at after this many windows is looked at no further (a runaway guard)


@dataclass(frozen=True)
class Scope:
    """What a shortage takes away: VMs of `family` at `priority` in `region` ("*": every region, every family)."""
    region: str = ALL
    family: str = ALL
    priority: str = "LowPriority"

    def covers(self, region: str, family: str, priority: str) -> bool:
        return (self.region == ALL or _region(self.region) == _region(region)) \
            and (self.family == ALL or self.family.lower() == family.lower()) and self.priority == priority

    def to_row(self) -> dict:
        return {"region": self.region, "family": self.family, "priority": self.priority}


def _region(name: str) -> str:
    return name.lower().replace(" ", "")


@dataclass(frozen=True)
class Shortage:
    scope: Scope
    start: datetime
    end: datetime | None = None  # None: until restored

    def active(self, now: datetime) -> bool:
        return self.start <= now and (self.end is None or now < self.end)

    def to_row(self) -> dict:
        return {**self.scope.to_row(), "start": self.start.isoformat(),
                "end": self.end.isoformat() if self.end else None}

    @classmethod
    def from_row(cls, row: dict) -> "Shortage":
        return cls(Scope(row["region"], row["family"], row["priority"]), datetime.fromisoformat(row["start"]),
                   datetime.fromisoformat(row["end"]) if row.get("end") else None)


@dataclass(frozen=True)
class Schedule:
    """Shortages at random over `scope`: gaps of mean `every` seconds, each lasting `length` seconds on average
    (real seconds, after the time scale), counted from `since`. The same seed gives the same windows."""
    seed: int
    every: float
    length: float
    since: datetime
    scope: Scope = Scope()

    def windows(self) -> Iterator[Shortage]:
        rng, moment = random.Random(f"{self.seed}|capacity"), self.since
        for _ in range(MANY_WINDOWS):
            start = moment + timedelta(seconds=rng.expovariate(1.0 / self.every))
            moment = start + timedelta(seconds=rng.expovariate(1.0 / self.length))
            yield Shortage(self.scope, start, moment)

    def at(self, now: datetime) -> Shortage | None:
        """The window in force at `now`, if any."""
        for window in self.windows():
            if window.start > now:
                return None
            if window.active(now):
                return window
        return None

    def upcoming(self, now: datetime, count: int) -> list[Shortage]:
        """The window in force and the next ones, `count` in all."""
        found: list[Shortage] = []
        for window in self.windows():
            if window.end is not None and window.end > now:
                found.append(window)
            if len(found) == count:
                break
        return found


def in_force(shortages: list[Shortage], schedule: Schedule | None, region: str, family: str, priority: str,
             now: datetime) -> Shortage | None:
    """The shortage that keeps a VM of (region, family, priority) from being allocated now, if any: the one that
    lasts longest (None, until restored, outlasts every end)."""
    found = [s for s in shortages if s.active(now) and s.scope.covers(region, family, priority)]
    window = schedule.at(now) if schedule is not None and schedule.scope.covers(region, family, priority) else None
    found += [window] if window else []
    return max(found, key=lambda s: (s.end is None, s.end or now), default=None)


def short_error(priority: str) -> dict:
    """The entry in a cluster's `errors` while its nodes cannot be allocated (see SHORT_CODE)."""
    kind = "low priority" if priority == "LowPriority" else "dedicated"
    return {"error": {"code": SHORT_CODE, "message": (
        f"Desired number of {kind} nodes could not be allocated. Allocation failed. We do not have sufficient "
        f"capacity for the requested VM size in this region. Read more about improving likelihood of allocation "
        f"success at {GUIDANCE}")}}


def _text(body: dict, key: str, default: str) -> str:
    value = body.get(key, default)
    value = default if value is None else value
    if not isinstance(value, str) or not value.strip():
        raise ValidationFailed(f"'{key}' must be a name, or \"*\" for all; got {value!r}.", target=key)
    return value.strip()


def parse_scope(body: dict, families: set[str]) -> Scope:
    region, family = _text(body, "region", ALL), _text(body, "family", ALL)
    known = {f.lower(): f for f in families}
    if family != ALL and family.lower() not in known:
        raise ValidationFailed(f"Unknown VM family '{family}'; ml_client.compute.list_sizes() names each size's "
                               "family (e.g. standardDSv2Family), or \"*\" for all.", target="family")
    priority = body.get("priority") or "LowPriority"
    if priority not in PRIORITIES:
        raise ValidationFailed(f"'priority' must be one of {', '.join(PRIORITIES)}, got {priority!r}.",
                               target="priority")
    return Scope(region, known.get(family.lower(), ALL), priority)


def _seconds(body: dict, key: str, required: bool) -> float | None:
    value = body.get(key)
    if value is None and not required:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0 or not math.isfinite(value):
        raise ValidationFailed(f"'{key}' must be a positive number of seconds{'' if required else ' or null'}, "
                               f"got {value!r}.", target=key)
    return float(value)


def _object(body: object) -> dict:
    if not isinstance(body, dict):
        raise ValidationFailed("The body must be a JSON object.", target="body")
    unknown = sorted(set(body) - {"region", "family", "priority", "seconds", "seed", "every", "for"})
    if unknown:
        raise ValidationFailed(f"Unknown field '{unknown[0]}'.", target=unknown[0])
    return body


def parse_shortage(body: object, families: set[str], now: datetime, scaled) -> Shortage:
    """{"region"?, "family"?, "priority"?, "seconds"?}: short from now, for `seconds` (scaled by the time scale
    through `scaled`) or until restored."""
    body = _object(body)
    seconds = _seconds(body, "seconds", required=False)
    end = None if seconds is None else now + timedelta(seconds=scaled(seconds))
    return Shortage(parse_scope(body, families), now, end)


@dataclass(frozen=True)
class Policy:
    """A seeded schedule as set (seconds before the time scale); `every` None: no random shortages."""
    every: float | None = None
    length: float = 60.0
    seed: int | None = None
    scope: Scope = Scope()

    def to_row(self) -> dict:
        return {"every": self.every, "for": self.length, "seed": self.seed, **self.scope.to_row()}

    @classmethod
    def from_row(cls, row: dict) -> "Policy":
        return cls(row.get("every"), row.get("for", 60.0), row.get("seed"),
                   Scope(row.get("region", ALL), row.get("family", ALL), row.get("priority", "LowPriority")))


def parse_policy(body: object, families: set[str]) -> Policy:
    """{"every", "for"?, "seed"?, "region"?, "family"?, "priority"?}; "every": null turns random shortages off."""
    body = _object(body)
    every = _seconds(body, "every", required=False)
    length = _seconds(body, "for", required=False) or 60.0
    seed = body.get("seed")
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int)):
        raise ValidationFailed(f"'seed' must be an integer or null, got {seed!r}.", target="seed")
    return Policy(every, length, seed, parse_scope(body, families))


def schedule_of(policy: Policy, seed: int, since: datetime, scaled) -> Schedule | None:
    """The schedule a policy draws, in real seconds (`scaled`: the time scale), None when it is off."""
    if policy.every is None:
        return None
    return Schedule(seed, scaled(policy.every), scaled(policy.length), since, policy.scope)


def with_seed(policy: Policy, entropy: random.Random) -> Policy:
    """A policy without a seed gets one, drawn once and kept, so a restart keeps its course."""
    return policy if policy.seed is not None else replace(policy, seed=entropy.randrange(2**31))
