"""Clusters whose nodes run on attached hosts (the tag `amlemu.hostPool`, domain/compute/placement.py): which host
gets each new node, and the images a node there needs, copied beforehand (the node image and each queued job's
environment image) and recorded on the host's compute, for its detach to remove them. The hosts' own engines run the
containers (runtime/engines.py sends each call to its engine); a host that does not answer gets no new node."""

import logging
from collections.abc import Iterable

from emulator.controller.host_engines import HostEngines
from emulator.domain.compute import placement
from emulator.domain.ids import WorkspaceRef
from emulator.domain.jobs.status import JobStatus
from emulator.runtime import labels
from emulator.runtime.base import Observed
from emulator.runtime.hosts import UNREACHABLE, HostRuntime, ImageMissing
from emulator.settings import Settings
from emulator.store.db import Store
from emulator.store.repositories import Repository
from emulator.store.tables import Compute

log = logging.getLogger("amlemu.controller")


def pool_hosts(repo: Repository, compute: Compute) -> list[Compute]:
    """The attached hosts a cluster's pool names that are attached now (a host detached since is left out)."""
    ref = WorkspaceRef.from_key(compute.workspace_key)
    rows = [repo.compute(ref.child_id("computes", name)) for name in placement.pool_of((compute.body or {}).get("tags"))]
    return [row for row in rows if row is not None and row.compute_type == "VirtualMachine"
            and row.provisioning_state == "Succeeded"]


def copy_images(store: Store, source, host_key: str, runtime: HostRuntime, images: Iterable[str]) -> bool:
    """`images` of the local engine made present on the host (copied outside any transaction: it takes a while);
    what was copied is recorded on the host's compute for its detach. False when one is not on the local engine."""
    copied: list[str] = []
    try:
        for image in dict.fromkeys(images):
            try:
                copied.extend(runtime.ensure_image(source, image))
            except ImageMissing:  # not built yet on the emulator's engine: the jobs wait
                log.warning("image %s is not on the emulator's engine to copy to %s", image, host_key)
                return False
        return True
    finally:  # what went there before a missing image or a lost host is recorded too: the detach removes it
        if copied:
            _record(store, host_key, copied)


def _record(store: Store, host_key: str, copied: list[str]) -> None:
    with store.transaction() as repo:
        row = repo.compute(host_key)
        if row is not None:
            record = dict(row.body["attached"])
            record["copiedImages"] = list(dict.fromkeys([*(record.get("copiedImages") or []), *copied]))
            row.body = {**row.body, "attached": record}


class HostPools:
    """`source`: the emulator's own engine (a docker client), where the images to copy are."""

    def __init__(self, settings: Settings, store: Store, engines: HostEngines, source):
        self.settings, self.store, self.engines, self.source = settings, store, engines, source

    def prepare(self, key: str) -> bool:
        """The images cluster `key`'s nodes and queued jobs need, on every host of its pool that answers: False
        while one is missing (its jobs are not sent yet)."""
        with self.store.transaction() as repo:
            compute = repo.compute(key)
            hosts = [row.key for row in pool_hosts(repo, compute)] if compute is not None else []
            images = [self.settings.node_image] + [
                job.image for job in repo.jobs_in((JobStatus.QUEUED.value,), key) if job.image]
        connected = self.engines.connected()
        ready = True
        for host in hosts:
            if (runtime := connected.get(host)) is None:
                continue
            try:
                ready = copy_images(self.store, self.source, host, runtime, images) and ready
            except UNREACHABLE as exc:  # lost meanwhile: its nodes are found lost by the next listing
                log.warning("attached host %s stopped answering: %s", host, exc)
                self.engines.lost(host)
        return ready

    def place(self, repo: Repository, compute: Compute, count: int, observed: Iterable[Observed]) -> list[str]:
        """A host (its compute key) for each of up to `count` new nodes of the pooled cluster: those that answer,
        the least loaded first; fewer, none at all, when no host answers (those nodes wait for one)."""
        connected = self.engines.connected()
        load: dict[str, int] = {}
        for container in observed:
            if (host := container.labels.get(labels.HOST)) is not None:
                load[host] = load.get(host, 0) + 1
        views = [placement.HostView(row.key, row.key in connected, float(row.body["attached"].get("cpus") or 1),
                                    load.get(row.key, 0)) for row in pool_hosts(repo, compute)]
        return placement.place(views, count)
