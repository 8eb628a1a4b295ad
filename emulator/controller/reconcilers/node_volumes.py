"""Detached nodes' data volumes (controller/specs/nodes.py) go once their node is gone: the engine keeps a named
volume after the container that used it, and nothing of a job's files may be left behind on a node's host."""

import logging
from collections.abc import Callable
from datetime import datetime, timedelta

from emulator.controller.specs.nodes import volume_prefix
from emulator.errors import EmulatorError
from emulator.runtime import labels
from emulator.runtime.base import Runtime
from emulator.settings import Settings
from emulator.store.db import Store

log = logging.getLogger("amlemu.controller")
EVERY = timedelta(seconds=5)  # a listing of the engine's volumes, not every pass


class NodeVolumes:
    def __init__(self, settings: Settings, store: Store, runtime: Runtime, clock: Callable[[], datetime]):
        self.settings, self.store, self.runtime, self.clock = settings, store, runtime, clock
        self.due: datetime | None = None

    def tick(self) -> None:
        """Remove the data volume of every node the store no longer has (after the clusters' pass removed their
        containers)."""
        now = self.clock()
        if self.due is not None and now < self.due:
            return
        self.due = now + EVERY
        with self.store.transaction() as repo:
            nodes = {node.node_id for node in repo.all_nodes()}
        prefix = volume_prefix(self.settings)
        for name in self.runtime.volumes({labels.STACK: self.settings.stack}):
            if name.startswith(prefix) and name[len(prefix):] not in nodes:
                try:
                    self.runtime.remove_volume(name)
                    log.info("removed the data volume %s of a node that is gone", name)
                except EmulatorError as exc:  # still in use by a container being removed: at the next look
                    log.info("data volume %s not removed yet: %s", name, exc.message)
