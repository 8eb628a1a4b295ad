"""What a deleted workspace leaves behind (services/workspace_delete.py cancelled its live jobs): each of its jobs,
once ended with no attempt out, is forgotten with its files. Level-based: a restart picks up where it stopped."""

import logging
import shutil

from emulator.domain.ids import WorkspaceRef
from emulator.domain.jobs import artifacts
from emulator.domain.jobs.status import JobStatus, is_terminal
from emulator.settings import Settings
from emulator.store.db import Store

log = logging.getLogger("amlemu.controller")


class Leftovers:
    def __init__(self, settings: Settings, store: Store):
        self.settings, self.store = settings, store

    def tick(self) -> None:
        with self.store.reading() as repo:  # a read first: a write lock on every pass for nothing slows the api
            if not any(self._done(job) for job in repo.orphan_jobs()):
                return
        folders = []
        with self.store.transaction() as repo:
            for job in repo.orphan_jobs():
                if self._done(job):
                    folders.append(self.settings.data_dir / artifacts.directory(
                        WorkspaceRef.from_key(job.workspace_key), job.name))
                    repo.remove(job)
                    log.info("forgot job %s of a deleted workspace", job.name)
        for folder in folders:
            shutil.rmtree(folder, ignore_errors=True)

    @staticmethod
    def _done(job) -> bool:
        """Ended, with no attempt out: nothing of it runs any more."""
        return is_terminal(JobStatus(job.status)) and job.dispatched_at is None
