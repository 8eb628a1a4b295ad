"""Keeps each cluster's pool of network sandboxes (see dispatch/protocol.py): one per node for the job it runs,
one for each job waiting ahead for it and one spare, and none once the cluster is down to zero nodes. Every pass
puts back in the free set each sandbox that no job container names, and starts or removes sandboxes (in
worker threads, off the loop) to match the pool's size. Level-based: a restart or a lost Redis key heals at
the next pass.
"""

import logging
import secrets
from collections import defaultdict
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from datetime import datetime

import redis

from emulator.controller.specs.nodes import on_hosts
from emulator.controller.specs.sandboxes import pool_of, sandbox_spec
from emulator.controller.start_failures import StartFailures
from emulator.controller.workspace_networks import WorkspaceNetworks
from emulator.dispatch import protocol
from emulator.domain.compute.cluster import NodeState
from emulator.domain.jobs import scheduling
from emulator.runtime import labels
from emulator.runtime.base import Observed, Runtime
from emulator.settings import Settings
from emulator.store.db import Store

log = logging.getLogger("amlemu.controller")
# The job a node runs, those sent ahead to it, and one still held while the last job's container is removed.
PER_NODE = 2 + scheduling.AHEAD
# Nodes that are up: a booting node's sandboxes would only slow its boot (jobs meanwhile make namespaces of their own).
UP = (NodeState.IDLE, NodeState.RUNNING)


class Sandboxes:
    def __init__(self, settings: Settings, store: Store, runtime: Runtime, broker: redis.Redis,
                 clock: Callable[[], datetime], networks: WorkspaceNetworks | None = None):
        self.settings, self.store, self.runtime, self.broker, self.clock = settings, store, runtime, broker, clock
        self.networks = networks or WorkspaceNetworks(settings, store, runtime)
        self.workspace_of: dict[str, str] = {}  # pool -> its cluster's workspace key
        self.failures = StartFailures()  # per pool: a sandbox that would not start is tried again with backoff
        self.workers = ThreadPoolExecutor(max_workers=2, thread_name_prefix="sandbox")
        self.starting: dict[str, dict[str, Future]] = defaultdict(dict)  # pool → name → its start
        self.started: set[str] = set()  # starts seen ended at a pass: the next pass's listing shows how they went
        self.removing: dict[str, Future] = {}  # by name: never put back while it goes

    def tick(self, sandboxes: list[Observed], jobs: list[Observed]) -> None:
        """`sandboxes`, `jobs`: the stack's sandbox and job containers, as just listed."""
        with self.store.transaction() as repo:
            clusters = [c for c in repo.computes()  # a cluster on attached hosts: its jobs run on the hosts' networks
                        if c.compute_type == "AmlCompute" and c.provisioning_state != "Deleting" and not on_hosts(c)]
            wanted = {pool_of(self.settings, c.key): PER_NODE * sum(NodeState(n.state) in UP for n in repo.nodes(c.key))
                      for c in clusters}
            self.workspace_of.update({pool_of(self.settings, c.key): c.workspace_key for c in clusters})
        used = {j.labels.get(labels.SANDBOX) for j in jobs}
        self.removing = {name: f for name, f in self.removing.items() if not f.done()}
        pools: dict[str, list[Observed]] = defaultdict(list)
        for sandbox in (s for s in sandboxes if s.name not in self.removing):
            pools[sandbox.labels.get(labels.POOL, "")].append(sandbox)
        for pool in set(pools) | set(wanted) | set(self.starting):
            self._keep(pool, pools.get(pool, []), wanted.get(pool, 0), used)

    def _keep(self, pool: str, have: list[Observed], wanted: int, used: set[str | None]) -> None:
        self._forget_starts(self.starting[pool])
        network = self.settings.jobs_network(self.workspace_of[pool]) if pool in self.workspace_of else None
        # One on another network (the shared jobs network of an older stack) goes once free, and is not counted.
        for stale in (s for s in have if s.labels.get(labels.NETWORK) != network):
            self._retire(pool, stale, used)
        have = [s for s in have if s.labels.get(labels.NETWORK) == network]
        alive = [s for s in have if s.running]
        # One being started is listed as created, not running, for a moment: it is neither dead nor a reason
        # to start another (taken for dead, or counted twice, sandboxes were removed and restarted all the
        # time under load, and jobs made namespaces of their own meanwhile).
        coming = set(self.starting[pool]) - {s.name for s in alive}
        for dead in (s for s in have if not s.running and s.name not in coming):
            protocol.withdraw_sandbox(self.broker, pool, dead.name)
            self._remove(dead.name)
        free = [s.name for s in alive if s.name not in used]
        for name in free:
            protocol.put_back_sandbox(self.broker, pool, name)
        for name in protocol.free_sandboxes(self.broker, pool) - {s.name for s in alive}:
            protocol.withdraw_sandbox(self.broker, pool, name)  # removed from outside, or by a stack now gone
        surplus = len(alive) + len(coming) - wanted
        for name in free:
            if surplus <= 0:
                break
            if protocol.withdraw_sandbox(self.broker, pool, name):  # else a job took it just now
                self._remove(name)
                surplus -= 1
        for _ in range(max(0, -surplus) if self.failures.due(pool, self.clock()) else 0):
            name = f"amlemu-{self.settings.stack}-sandbox-{secrets.token_hex(6)}"
            self.starting[pool][name] = self.workers.submit(self._start, pool, name, self.workspace_of[pool])
        if not self.starting[pool]:
            del self.starting[pool]

    def _forget_starts(self, starting: dict[str, Future]) -> None:
        """Drop the starts that had ended by the last pass. One that ended since may have ended after this pass's
        listing was taken, which then lacks it or shows it created: it stays `coming` one more pass (forgotten at
        once, it was taken for missing or dead, and the pool grew by one and shrank again under load)."""
        for name in [name for name, future in starting.items() if future.done()]:
            if name in self.started:
                del starting[name]
                self.started.discard(name)
            else:
                self.started.add(name)

    def _retire(self, pool: str, sandbox: Observed, used: set[str | None]) -> None:
        """Out of the pool, and removed once no job is in it (a job that took it just now finds it gone and makes a
        namespace of its own: dispatch/job_container.stage)."""
        if sandbox.name not in used:
            protocol.withdraw_sandbox(self.broker, pool, sandbox.name)
            self._remove(sandbox.name)

    def _remove(self, name: str) -> None:
        self.removing[name] = self.workers.submit(self.runtime.remove, name)

    def _start(self, pool: str, name: str, workspace_key: str) -> None:
        try:
            self.runtime.run(sandbox_spec(self.settings, pool, name, self.networks.jobs(workspace_key)))
        except Exception as exc:  # jobs use namespaces of their own meanwhile; tried again with backoff
            reason = getattr(exc, "message", str(exc)).replace(name, "<sandbox>")
            self.failures.failed(pool, f"a network sandbox of {pool}", reason, self.clock())
            return
        self.failures.started(pool, f"a network sandbox of {pool}")
        protocol.put_back_sandbox(self.broker, pool, name)
