"""Low-priority preemption: the Scheduled Events notice a node shows, the policy that says what happens to
the job, and the seeded random timeline. Pure: time and identifiers come in as parameters.

Azure's sequence (semantics reference §2.1, recommendations 8-10): a `Preempt` event appears in the VM's
Scheduled Events document at least 30 s before `NotBefore`, and nothing else happens then: no signal, the
notice is the only sign (code that polls it has the whole notice to checkpoint). At `NotBefore`, or as soon
as someone acknowledges the event with a `StartRequests` POST, the event is `Started` and the VM is taken:
its processes get SIGTERM as the guest shuts down, and the node is killed a short grace later. The node then
shows `preempted` for a while and disappears; its job goes back to the queue.
"""

import math
import random
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from email.utils import format_datetime

from emulator.errors import ValidationFailed

NOTICE_SECONDS = 30.0  # Azure's minimum for Preempt; scaled by the time scale
# From the VM being taken (SIGTERM to what runs on it) to the kill. A guest shutting down gives its processes
# a moment between SIGTERM and SIGKILL; a few seconds lets a job that handles SIGTERM save a small checkpoint
# and exit while the node's end stays close to NotBefore. Not scaled by the time scale: it is how long code
# needs to react, which a compressed demo does not shorten.
SHUTDOWN_GRACE_SECONDS = 5.0
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
    taken_at: datetime | None = None  # when the VM was taken (its processes signalled)

    def start(self) -> "Notice":
        return self if self.status == STARTED else replace(self, status=STARTED, incarnation=self.incarnation + 1)

    def due(self, now: datetime) -> bool:
        """The VM is taken now: the event was acknowledged, or its NotBefore has come."""
        return self.status == STARTED or now >= self.not_before

    def take(self, now: datetime) -> "Notice":
        """The VM is being taken from `now` (once: a later call keeps the first moment)."""
        return self if self.taken_at is not None else replace(self.start(), taken_at=now)

    def kill_due(self, now: datetime, busy: bool) -> bool:
        """The node is killed: the grace after its taking has passed, or nothing runs on it any more."""
        return self.taken_at is not None and (
            not busy or now >= self.taken_at + timedelta(seconds=SHUTDOWN_GRACE_SECONDS))

    def to_row(self) -> dict:
        return {"eventId": self.event_id, "resource": self.resource, "notBefore": self.not_before.isoformat(),
                "status": self.status, "incarnation": self.incarnation,
                "takenAt": self.taken_at.isoformat() if self.taken_at else None}

    @classmethod
    def from_row(cls, row: dict) -> "Notice":
        taken = row.get("takenAt")  # absent from rows written before the grace existed
        return cls(row["eventId"], row["resource"], datetime.fromisoformat(row["notBefore"]), row["status"],
                   row["incarnation"], datetime.fromisoformat(taken) if taken else None)


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
