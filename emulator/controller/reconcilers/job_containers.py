"""The job-container sweep: a job container of no current attempt (cancelled, requeued, ended) goes."""

import logging
import shutil
from collections.abc import Callable

import redis

from emulator.controller.specs import job_ranks
from emulator.dispatch import job_container, protocol
from emulator.dispatch.protocol import job_tag
from emulator.domain.jobs.status import JobStatus
from emulator.runtime import labels
from emulator.runtime.base import Containers, Observed
from emulator.settings import Settings
from emulator.store.db import Store
from emulator.store.repositories import Repository

log = logging.getLogger("amlemu.controller")


class JobContainers:
    def __init__(self, settings: Settings, store: Store, runtime: Containers, broker: redis.Redis,
                 active_attempts: Callable[[Repository], dict[str, int]]):
        self.settings, self.store, self.runtime, self.broker = settings, store, runtime, broker
        self.active_attempts = active_attempts  # job tag -> the attempt whose containers may run

    def tick(self, containers: list[Observed]) -> None:
        """Job containers of no current attempt (cancelled, requeued, ended) go. One whose node died may have
        finished meanwhile: once it is gone, its exit status is reported for the node, so that work done as the
        node went stands (JobReconciler's late success) instead of running again."""
        if not containers:
            return
        with self.store.reading() as repo:  # a read: most passes find every job container current
            active = self.active_attempts(repo)
            stale = [c for c in containers
                     if active.get(c.labels.get(labels.JOB)) != int(c.labels.get(labels.ATTEMPT, -1))]
            queued = {job_tag(j.key): j.key for j in repo.jobs_in((JobStatus.QUEUED.value,))} if stale else {}
        for container in stale:
            tag, attempt = container.labels.get(labels.JOB), int(container.labels.get(labels.ATTEMPT, -1))
            log.info("removing job container %s: its attempt is over", container.name)
            self.runtime.remove(container.id)  # a SIGKILL first, if it still runs: nothing of it goes on after
            rank = int(container.labels.get(labels.RANK, 0))
            workdir = job_ranks.rank_workdir(tag, attempt, rank)
            exit_file = self.settings.data_dir / workdir / job_container.EXIT
            if tag in queued and (ended := job_container.recorded(exit_file)) is not None:
                protocol.report_for_lost_node(self.broker, queued[tag], attempt, rank, ended.code)
            # its node, which would have removed the rank's folder, may be gone
            shutil.rmtree(self.settings.data_dir / job_container.rank_dir(workdir), ignore_errors=True)
