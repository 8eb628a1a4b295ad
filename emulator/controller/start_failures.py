"""Containers that would not start, per owner (a cluster, an instance, a deployment): when to try again
(domain.backoff) and one line in the log per new reason instead of one per pass."""

import logging
from datetime import datetime

from emulator.domain import backoff

log = logging.getLogger("amlemu.controller")


class StartFailures:
    def __init__(self):
        self.failures: dict[str, backoff.Failure] = {}

    def due(self, owner: str, now: datetime) -> bool:
        return backoff.due(self.failures.get(owner), now)

    def failed(self, owner: str, what: str, reason: str, now: datetime) -> backoff.Failure:
        """`what` failed to start for `reason` (the engine's words, with the container's own name taken out so
        that each try's new name does not make it news)."""
        previous = self.failures.get(owner)
        failure = self.failures[owner] = backoff.failed(previous, reason, now)
        if backoff.news(previous, reason):
            log.error("%s failed to start: %s (tried again with backoff, up to every %g s)", what, reason,
                      backoff.MOST_SECONDS)
        return failure

    def started(self, owner: str, what: str) -> bool:
        """True when it had failed before (what it showed of that can go)."""
        previous = self.failures.pop(owner, None)
        if previous is not None:
            log.info("%s started after %d failed tries", what, previous.count)
        return previous is not None
