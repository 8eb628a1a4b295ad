"""Jobs as the api calls them: submit, read, list, cancel, and the RunHistory data plane's reads."""

from emulator.domain.ids import WorkspaceRef
from emulator.services import jobs, pipelines, sweeps, workspaces
from emulator.services.external_data import ExternalData
from emulator.services.facade.base import Service
from emulator.store.tables import Job, Workspace


class Jobs(Service):
    def put(self, ref: WorkspaceRef, name: str, body: object) -> tuple[Job, bool, Workspace]:
        outside = self._outside(ref, name, body)
        with self.store.transaction() as repo:
            if sweeps.is_sweep(body) or pipelines.is_pipeline(body):
                submit = sweeps.put if sweeps.is_sweep(body) else pipelines.put
                row, created = submit(repo, ref, name, body, self.clock(), self.settings.data_dir, outside)
            else:
                row, created = jobs.put(repo, ref, name, body, self.clock(), self.settings.data_dir, outside, client=True)
            return row, created, workspaces.get(repo, ref)

    def _outside(self, ref: WorkspaceRef, name: str, body: object) -> dict[str, str | None]:
        """A new job's inputs outside the workspace, read before the transaction: a fetch or a large copy must
        not hold the store's write lock. A body `parse` refuses is left for the transaction to refuse."""
        with self.store.reading() as repo:
            workspaces.get(repo, ref)
            if repo.job(ref.child_id("jobs", name)) is not None:
                return {}
        return ExternalData.of(self.settings).copies_of(ref, body)

    def start_local(self, ref: WorkspaceRef, body: object) -> bytes:
        """The Execution Service's start of a local run: the zip its client invokes."""
        with self.store.transaction() as repo:
            workspaces.get(repo, ref)
            return jobs.start_local(repo, ref, body, self.clock())

    def get(self, ref: WorkspaceRef, name: str) -> tuple[Job, Workspace]:
        """NotFound for the job before the workspace: a deleted workspace's jobs stay until they end."""
        with self.store.transaction() as repo:
            return jobs.get(repo, ref, name), workspaces.get(repo, ref)

    def job(self, ref: WorkspaceRef, name: str) -> Job:
        """The job alone, its workspace unread: cancelStatus and the emulator's history answer without it."""
        with self.store.transaction() as repo:
            return jobs.get(repo, ref, name)

    def listed(self, ref: WorkspaceRef, view: str, schedule: str | None = None,
               scheduled: bool | None = None) -> tuple[list[Job], Workspace]:
        with self.in_workspace(ref) as (repo, workspace):
            return jobs.listed(repo, ref, view, schedule, scheduled), workspace

    def children(self, ref: WorkspaceRef, name: str) -> tuple[list[Job], Workspace]:
        """A parent's children in the order they were made (none for a job that is no parent)."""
        with self.store.transaction() as repo:
            parent = jobs.get(repo, ref, name)
            return repo.children(parent.key), workspaces.get(repo, ref)

    def cancel(self, ref: WorkspaceRef, name: str) -> Job:
        with self.store.transaction() as repo:
            return jobs.cancel(repo, ref, name, self.clock())

    def output_locations(self, ref: WorkspaceRef, asset_ids: list[str]) -> dict[str, dict]:
        """{uri, type} by asset id, for the ids that name a job output."""
        with self.in_workspace(ref) as (repo, _):
            return {asset_id: found for asset_id in asset_ids if (found := jobs.output_location(repo, ref, asset_id))}
