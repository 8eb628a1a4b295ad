"""When to probe a model-server instance and what the answers make of it. Pure: the time comes in.

Readiness and liveness follow the deployment's probe settings (Azure: initialDelay, period, timeout,
successThreshold, failureThreshold; both ask the same health route, so one request serves both). On top of
them, until an instance first answers, readiness is tried early and often from its start, whatever the
readiness initialDelay: the inference server is up in about a second, and waiting out Azure's 10 s default
would make every deployment take 12 s to succeed. An early try only counts when it succeeds (a failure is
the server still starting, not a failed probe), so failureThreshold keeps its meaning. Liveness keeps its
own initial delay.
"""

from dataclasses import dataclass
from datetime import datetime

from emulator.domain.serving.deployments import Probe

EARLY_READINESS_SECONDS = 0.25  # between early readiness tries
# An early try's timeout: the reconcile pass runs the probes, and must not wait long on a server that is not
# listening yet (a refused connection answers at once; this bounds the rest).
EARLY_TIMEOUT_SECONDS = 0.3
SCHEDULED, EARLY = "scheduled", "early"


@dataclass
class Probed:
    """What the probes have seen of one container (kept in memory: a restarted controller probes afresh)."""
    since: datetime
    last: datetime | None = None  # the last probe on the configured schedule
    early: datetime | None = None  # the last early readiness try
    ready: bool = False
    ever_ready: bool = False
    successes: int = 0
    failures: int = 0

    def due(self, now: datetime, readiness: Probe, liveness: Probe) -> str | None:
        """SCHEDULED, EARLY or None: which kind of try is due now, if any."""
        if (now - self.since).total_seconds() >= min(readiness.initial_delay, liveness.initial_delay) and (
                self.last is None or (now - self.last).total_seconds() >= min(readiness.period, liveness.period)):
            return SCHEDULED
        if not self.ever_ready and (self.early is None
                                    or (now - self.early).total_seconds() >= EARLY_READINESS_SECONDS):
            return EARLY
        return None

    def timeout(self, kind: str, readiness: Probe) -> float:
        return readiness.timeout if kind == SCHEDULED else min(readiness.timeout, EARLY_TIMEOUT_SECONDS)

    def record(self, kind: str, now: datetime, healthy: bool, readiness: Probe, liveness: Probe) -> bool:
        """Take in one answer; True when the instance has failed its liveness probe (it is to be replaced)."""
        if kind == SCHEDULED:
            self.last = now
        else:
            self.early = now
        if healthy:
            self.successes, self.failures = self.successes + 1, 0
        elif kind == SCHEDULED:
            self.successes, self.failures = 0, self.failures + 1
        if healthy and self.successes >= readiness.success_threshold:
            self.ready = self.ever_ready = True
        elif not healthy and self.failures >= readiness.failure_threshold:
            self.ready = False
        return (self.ever_ready and (now - self.since).total_seconds() >= liveness.initial_delay
                and self.failures >= liveness.failure_threshold)
