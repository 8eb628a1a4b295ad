"""Each workspace's jobs and scoring networks (domain/networks.py): made on demand, just before the first container
that goes on one starts, and removed once their workspace is deleted and nothing of it is left on them.

Jobs reach the api (their MLflow tracking and artifact uploads) on their workspace's jobs network under the name
`api`: the controller joins the api's container to every jobs network, as a compose file cannot join networks it
does not own, and again when the api's container is recreated. There the api takes a job's run token for its own
workspace's tracking only (services/facade/tracking.py). Bridges are isolated from one another by the engine: a
job of one workspace reaches neither another's containers nor redis, which is on the stack's own network; and the
jobs network is sealed unless settings.jobs_outbound says otherwise, so neither the host's ports.

The scoring network is the workspace's one that the host reaches: its model servers (the scoring router, on the
host's network, forwards to them by address; the controller joins to probe them) and its compute instances'
workstations (their ports are published)."""

import logging
import threading
from datetime import datetime, timedelta

from emulator.domain import networks
from emulator.domain.ids import WorkspaceRef
from emulator.errors import RuntimeUnavailable
from emulator.runtime import labels
from emulator.runtime.base import ContainerSpec, Observed, Runtime
from emulator.settings import Settings
from emulator.store.db import Store

log = logging.getLogger("amlemu.controller")
RECHECK = timedelta(seconds=5)  # a recreated api container is joined, a deleted workspace's networks go, within this


class WorkspaceNetworks:
    def __init__(self, settings: Settings, store: Store, runtime: Runtime):
        self.settings, self.store, self.runtime = settings, store, runtime
        self.made: set[str] = set()
        self.joined: set[tuple[str, str]] = set()  # (container id, network)
        self.checked: datetime | None = None
        # Sandboxes start in worker threads: two makers of one network at once would make two (the engine allows it)
        self.making = threading.Lock()

    def jobs(self, workspace_key: str) -> str:
        """The workspace's jobs network, made (with the api on it) if it was not."""
        name = self.settings.jobs_network(workspace_key)
        with self.making:
            if name not in self.made:
                self.runtime.ensure_network(name, self._labels(networks.JOBS, workspace_key),
                                            sealed=self.settings.jobs_outbound == "none")
                self.made.add(name)
                self._join([name], self._service("api"), self.settings.jobs_api_host)  # a job may start on it now
        return name

    def scoring(self, workspace_key: str) -> str:
        """The workspace's scoring network, made (with the controller, which probes the model servers, on it)."""
        name = self.settings.scoring_network(workspace_key)
        with self.making:
            if name not in self.made:
                self.runtime.ensure_network(name, self._labels(networks.SCORING, workspace_key))
                self.made.add(name)
                self._join([name], self._service("controller"))
        return name

    def ready(self, spec: ContainerSpec, workspace_key: str) -> None:
        """Make those of the workspace's networks that the container goes on."""
        for name in (spec.network, *spec.networks):
            if name == self.settings.jobs_network(workspace_key):
                self.jobs(workspace_key)
            elif name == self.settings.scoring_network(workspace_key):
                self.scoring(workspace_key)

    def attach(self, container: Observed, network: str) -> None:
        """A container started before its workspace had networks of its own (by an older stack, adopted since)
        joins its workspace's: a node serves its jobs' Scheduled Events there. Once per container."""
        self._join([network], [container])

    def tick(self, now: datetime) -> None:
        if self.checked is not None and now - self.checked < RECHECK:
            return
        self.checked = now
        have = self.runtime.networks({labels.STACK: self.settings.stack})  # listed before the workspaces are read:
        with self.store.reading() as repo:  # one made meanwhile, for a workspace made meanwhile, is not taken for gone
            live = {w.key for w in repo.all_workspaces()}
        with self.making:
            self.made &= set(have)  # one removed from outside is made again when next wanted
        apis, controllers = self._service("api"), self._service("controller")
        gone = {n for n, found in have.items() if found.get(labels.WORKSPACE_KEY, "") not in live | {""}}
        for name in gone:
            self._remove(name, apis + controllers)
        # The shared network of an older stack too: what still runs there reaches the api until it is replaced.
        jobs = [n for n, found in have.items() if n not in gone and (found.get(labels.NETWORK) == networks.JOBS
                                                                     or n == self.settings.shared_jobs_network)]
        self._join(jobs, apis, self.settings.jobs_api_host)
        self._join([n for n, found in have.items() if n not in gone and found.get(labels.NETWORK) == networks.SCORING],
                   controllers)

    def _labels(self, kind: str, workspace_key: str) -> dict[str, str]:
        return {labels.STACK: self.settings.stack, labels.NETWORK: kind, labels.WORKSPACE_KEY: workspace_key,
                labels.WORKSPACE: WorkspaceRef.from_key(workspace_key).name.lower()}

    def _service(self, service: str) -> list[Observed]:
        """The stack's api or controller container (compose started it: not the emulator's own). None when the
        controller runs outside a container, as in tests: the host reaches every bridge."""
        wanted = {labels.STACK: self.settings.stack, labels.SERVICE: service}
        return [c for c in self.runtime.list(wanted, managed=False) if c.running]

    def _join(self, names: list[str], containers: list[Observed], alias: str | None = None) -> None:
        for container in containers:
            for name in names:
                if (container.id, name) in self.joined:
                    continue
                try:
                    self.runtime.join_network(container.id, name, alias or container.name)
                except RuntimeUnavailable as exc:
                    log.warning("%s cannot join %s yet: %s", container.name, name, exc.message)
                    continue
                self.joined.add((container.id, name))
                log.info("%s joined %s as %s", container.name, name, alias or container.name)

    def _remove(self, name: str, services: list[Observed]) -> None:
        """The api and controller leave first; the workspace's own containers may still be going: tried again."""
        for service in services:
            self.runtime.leave_network(service.id, name)
            self.joined.discard((service.id, name))
        try:
            self.runtime.remove_network(name)
        except RuntimeUnavailable as exc:
            log.debug("network %s of a deleted workspace is still in use: %s", name, exc.message)
            return
        with self.making:
            self.made.discard(name)
        log.info("removed network %s of a deleted workspace", name)
