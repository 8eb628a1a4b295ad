"""The Docker engines of the attached hosts, by their compute's key: one connection per host, kept while it answers,
for every pass that works there (the VM's own node, the nodes of the clusters pooled over it, their images). A host
that did not answer is tried again only after RETRY_SECONDS: each try waits out its connect timeout, and the
controller's pass (every other compute's too) would wait with it each time. A kept connection whose ping went
unanswered for SILENT (a cut-off host's: it sends nothing back) is such a host at once; one refused or reset (the
host's sshd or engine restarted) is connected afresh in the same pass."""

import logging
from collections.abc import Callable
from datetime import datetime, timedelta

from emulator.runtime.hosts import UNREACHABLE, HostAccess, HostRuntime

log = logging.getLogger("amlemu.controller")
RuntimeOf = Callable[[HostAccess], HostRuntime]
RETRY_SECONDS = 15.0
SILENT = timedelta(seconds=2)  # a refusal or a reset comes within milliseconds; the ping waits CONNECT_SECONDS


class HostEngines:
    def __init__(self, clock: Callable[[], datetime], runtime_of: RuntimeOf = HostRuntime):
        self.clock, self.runtime_of = clock, runtime_of
        self.runtimes: dict[str, HostRuntime] = {}  # compute key -> its host's engine, while it answers
        self.retry_at: dict[str, datetime] = {}  # compute key -> when a host that did not answer is tried again

    def get(self, key: str, name: str, access: HostAccess) -> HostRuntime | None:
        """The host's engine, connected now if it was not (and no retry is pending); None when it does not answer."""
        runtime = self.runtimes.get(key)
        if runtime is not None:
            asked = self.clock()
            try:
                runtime.answers()  # within seconds: a cut-off or hung host's connection is silent
                return runtime
            except UNREACHABLE as exc:
                self.runtimes.pop(key, None)
                if self.clock() - asked >= SILENT:  # a fresh connection would wait out its timeout as well
                    return self._unreachable(key, name, exc)
        now = self.clock()
        if key in self.retry_at and now < self.retry_at[key]:
            return None
        try:
            self.runtimes[key] = runtime = self.runtime_of(access)
            self.retry_at.pop(key, None)
            return runtime
        except UNREACHABLE as exc:
            return self._unreachable(key, name, exc)

    def _unreachable(self, key: str, name: str, exc: BaseException) -> None:
        log.warning("attached host %s cannot be reached: %s", name, exc)
        self.retry_at[key] = self.clock() + timedelta(seconds=RETRY_SECONDS)

    def connected(self) -> dict[str, HostRuntime]:
        """The engines that answered last, without trying any other."""
        return dict(self.runtimes)

    def lost(self, key: str) -> None:
        """A host that stopped answering mid-pass: the next `get` connects afresh."""
        self.runtimes.pop(key, None)

    def keep(self, keys: set[str]) -> None:
        """Forget the hosts no longer attached (controller/hosts.py cleans up after them)."""
        for key in set(self.runtimes) - keys:
            self.runtimes.pop(key, None)
