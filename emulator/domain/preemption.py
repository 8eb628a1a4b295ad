"""Low-priority preemption: the Scheduled Events notice a node shows, the policy that says what happens to
the job, and the seeded random timeline. Pure: time and identifiers come in as parameters.

Azure's sequence (semantics reference §2.1, recommendations 8-10): a `Preempt` event appears in the VM's
Scheduled Events document at least 30 s before `NotBefore`; the job is signalled; at `NotBefore`, or as
soon as someone acknowledges the event with a `StartRequests` POST, the event is `Started` and the VM is
taken. The node then shows `preempted` for a while and disappears; its job goes back to the queue.
"""

import math
import random
from dataclasses import dataclass
from datetime import datetime, timedelta
from email.utils import format_datetime

from emulator.errors import ValidationFailed

NOTICE_SECONDS = 30.0  # Azure's minimum for Preempt; scaled by the time scale
PREEMPTED_KEEP_SECONDS = 60.0  # how long a preempted node stays listed; scaled by the time scale
REQUEUE, FAIL = "requeue", "fail"
ON_PREEMPTION = (REQUEUE, FAIL)
JOB_PROPERTY = "amlemu.onPreemption"  # a job's own choice, in its `properties`
FAILURE_MESSAGE = ("AzureMLCompute job failed. PreemptionError: Nodes of this job got pre-empted. Check if the "
                   "run has failed or restarted. Reason: Received pre-emption warning signal")
SCHEDULED, STARTED = "Scheduled", "Started"


@dataclass(frozen=True)
class Notice:
    """The Preempt event on one node."""
    event_id: str
    resource: str  # the node's name, as `Resources` lists it
    not_before: datetime
    status: str = SCHEDULED
    incarnation: int = 1  # DocumentIncarnation: +1 whenever the node's events change

    def start(self) -> "Notice":
        return self if self.status == STARTED else Notice(self.event_id, self.resource, self.not_before, STARTED,
                                                          self.incarnation + 1)

    def due(self, now: datetime) -> bool:
        """The VM is taken now: the event was acknowledged, or its NotBefore has come."""
        return self.status == STARTED or now >= self.not_before

    def to_row(self) -> dict:
        return {"eventId": self.event_id, "resource": self.resource, "notBefore": self.not_before.isoformat(),
                "status": self.status, "incarnation": self.incarnation}

    @classmethod
    def from_row(cls, row: dict) -> "Notice":
        return cls(row["eventId"], row["resource"], datetime.fromisoformat(row["notBefore"]), row["status"],
                   row["incarnation"])


def new_notice(event_id: str, resource: str, now: datetime, notice_seconds: float) -> Notice:
    return Notice(event_id.upper(), resource, now + timedelta(seconds=notice_seconds))


def rfc1123(moment: datetime) -> str:
    return format_datetime(moment, usegmt=True)


def document(notice: Notice | None) -> dict:
    """The node's Scheduled Events document, as `GET /metadata/scheduledevents` returns it."""
    if notice is None:
        return {"DocumentIncarnation": 0, "Events": []}
    return {"DocumentIncarnation": notice.incarnation, "Events": [{
        "EventId": notice.event_id, "EventType": "Preempt", "ResourceType": "VirtualMachine",
        "Resources": [notice.resource], "EventStatus": notice.status,
        "NotBefore": "" if notice.status == STARTED else rfc1123(notice.not_before),
        "Description": "", "EventSource": "Platform", "DurationInSeconds": -1}]}


def start_requests(body: object) -> list[str]:
    """The event ids a `StartRequests` POST acknowledges; a malformed body is refused (Azure answers 400)."""
    requests = body.get("StartRequests") if isinstance(body, dict) else None
    if not isinstance(requests, list) or not all(
            isinstance(r, dict) and isinstance(r.get("EventId"), str) and r["EventId"] for r in requests):
        raise ValidationFailed('The body must be {"StartRequests": [{"EventId": "<id>"}, ...]}.',
                               target="StartRequests")
    return [r["EventId"].upper() for r in requests]


@dataclass(frozen=True)
class Policy:
    """What a cluster does about preemption. `mean_seconds` None: no random preemption (on demand only)."""
    mean_seconds: float | None = None
    seed: int | None = None
    on_preemption: str = REQUEUE

    def to_row(self) -> dict:
        return {"meanSecondsBetweenPreemptions": self.mean_seconds, "seed": self.seed,
                "onPreemption": self.on_preemption}


def parse_policy(body: object, defaults: Policy) -> Policy:
    """A per-cluster policy from the emulator's REST body; absent fields keep `defaults`."""
    if not isinstance(body, dict):
        raise ValidationFailed("The body must be a JSON object.", target="body")
    mean = body.get("meanSecondsBetweenPreemptions", defaults.mean_seconds)
    if mean is not None and (isinstance(mean, bool) or not isinstance(mean, int | float) or not mean > 0
                             or not math.isfinite(mean)):
        raise ValidationFailed(f"meanSecondsBetweenPreemptions must be a positive number or null, got {mean!r}.",
                               target="meanSecondsBetweenPreemptions")
    seed = body.get("seed", defaults.seed)
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int)):
        raise ValidationFailed(f"seed must be an integer or null, got {seed!r}.", target="seed")
    on = body.get("onPreemption", defaults.on_preemption)
    if on not in ON_PREEMPTION:
        raise ValidationFailed(f"onPreemption must be one of {', '.join(ON_PREEMPTION)}, got {on!r}.",
                               target="onPreemption")
    return Policy(None if mean is None else float(mean), seed, on)


def job_choice(properties: object) -> str | None:
    """A job's own onPreemption, from its `properties` (validated at submission)."""
    value = properties.get(JOB_PROPERTY) if isinstance(properties, dict) else None
    if value is not None and value not in ON_PREEMPTION:
        raise ValidationFailed(f"properties['{JOB_PROPERTY}'] must be one of {', '.join(ON_PREEMPTION)}, "
                               f"got {value!r}.", target=f"properties.properties.{JOB_PROPERTY}")
    return value


def outcome(job_properties: object, cluster: Policy) -> str:
    """The job's own setting wins over its cluster's."""
    return job_choice(job_properties) or cluster.on_preemption


@dataclass(frozen=True)
class Timeline:
    """Random preemptions of one cluster as a Poisson process: exponential gaps of mean `mean_seconds`
    (real seconds, after the time scale) counted from `since`. The same seed and cluster give the same
    instants and the same victim picks, so a run can be replayed."""
    seed: int | None
    key: str  # the cluster's identity, so clusters sharing a seed do not move in lockstep
    mean_seconds: float
    since: datetime

    def _rng(self, *salt: object) -> random.Random:
        return random.Random(f"{self.seed}|{self.key}|" + "|".join(map(str, salt)))

    def instant(self, n: int) -> datetime:
        """When the n-th preemption (0-based) falls due."""
        gaps = self._rng("gaps")
        offset = sum(gaps.expovariate(1.0 / self.mean_seconds) for _ in range(n + 1))
        return self.since + timedelta(seconds=offset)

    def due(self, done: int, now: datetime) -> int:
        """How many preemptions after the first `done` have fallen due by `now`."""
        count = 0
        while self.instant(done + count) <= now:
            count += 1
        return count

    def victim(self, n: int, candidates: list[str]) -> str | None:
        """The node the n-th preemption takes, from candidates in a stable order (oldest first)."""
        return self._rng("victim", n).choice(candidates) if candidates else None


def unseeded(seed: int | None, entropy: random.Random) -> int:
    """A timeline without a seed still gets one, drawn once and stored, so a restart keeps its course."""
    return seed if seed is not None else entropy.randrange(2**31)
