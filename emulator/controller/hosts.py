"""Attached hosts in the controller (issue 23): a detach (ARM's Detach, or Delete: the emulator cannot delete a
machine it does not own) leaves the host as it was before the attach. What the emulator put there goes, found by its
labels (containers, networks, volumes) or by its record (images it copied); the rest of the host is the user's and stays, as
Azure's detach leaves the VM itself untouched. A host that cannot be reached is detached all the same (Azure's
detach needs no access to the VM either); what ran there is then left to its owner, and the log says so."""

import logging
from collections.abc import Callable
from datetime import datetime

from emulator.runtime import labels
from emulator.runtime.hosts import HostAccess, HostCheckFailed, HostRuntime
from emulator.services import attached, operations
from emulator.settings import Settings
from emulator.store.db import Store

log = logging.getLogger("amlemu.controller")
RuntimeOf = Callable[[HostAccess], HostRuntime]


class AttachedHosts:
    def __init__(self, settings: Settings, store: Store, clock: Callable[[], datetime], secret: bytes,
                 runtime_of: RuntimeOf = HostRuntime):
        self.settings, self.store, self.clock, self.secret, self.runtime_of = settings, store, clock, secret, runtime_of

    def tick(self) -> None:
        with self.store.transaction() as repo:
            detaching = [(row.key, row.name, self._access(row), list(row.body["attached"].get("copiedImages") or []))
                         for row in repo.computes() if row.compute_type == attached.COMPUTE_TYPE
                         and row.provisioning_state == "Deleting"]
        for key, name, access, images in detaching:
            if access is not None:
                self._clean(key, name, access, images)
            self._forget(key)

    def _access(self, row) -> HostAccess | None:
        try:
            return attached.access_of(row, self.secret)
        except ValueError as exc:  # sealed under another token key: the host cannot be reached, the detach goes on
            log.warning("detaching %s: %s; what the emulator ran on its host stays", row.name, exc)
            return None

    def _clean(self, key: str, name: str, access: HostAccess, images: list[str]) -> None:
        try:
            runtime = self.runtime_of(access)
        except HostCheckFailed as exc:
            log.warning("detaching %s: its host cannot be reached (%s); what the emulator ran there stays", name, exc)
            return
        # its own node and jobs (the compute's), and the stack's others there: nodes of clusters pooled on it
        for owned in ({labels.COMPUTE_ID: key}, {labels.STACK: self.settings.stack}):
            for container in runtime.list(owned):
                runtime.remove(container.id)
            for network in runtime.networks(owned):
                runtime.remove_network(network)
            for volume in runtime.volumes(owned):
                runtime.remove_volume(volume)
        for image in images:  # only those copied there, and only when nothing of the host's own uses them
            runtime.remove_image(image)
        log.info("detached %s: %s cleaned of what the emulator ran there", name, access.address)

    def _forget(self, key: str) -> None:
        with self.store.transaction() as repo:
            row = repo.compute(key)
            if row is None:
                return
            repo.drop_nodes(key)
            operations.finish(repo, key, self.clock())
            repo.remove(row)
