"""Jobs as the api calls them: submit, read, list, cancel, and the RunHistory data plane's reads."""

from emulator.domain.ids import WorkspaceRef
from emulator.services import jobs, workspaces
from emulator.services.facade.base import Service
from emulator.store.tables import Job, Workspace


class Jobs(Service):
    def put(self, ref: WorkspaceRef, name: str, body: object) -> tuple[Job, bool, Workspace]:
        with self.store.transaction() as repo:
            row, created = jobs.put(repo, ref, name, body, self.clock())
            return row, created, workspaces.get(repo, ref)

    def get(self, ref: WorkspaceRef, name: str) -> tuple[Job, Workspace]:
        """NotFound for the job before the workspace: a deleted workspace's jobs stay until they end."""
        with self.store.transaction() as repo:
            return jobs.get(repo, ref, name), workspaces.get(repo, ref)

    def job(self, ref: WorkspaceRef, name: str) -> Job:
        """The job alone, its workspace unread: cancelStatus and the emulator's history answer without it."""
        with self.store.transaction() as repo:
            return jobs.get(repo, ref, name)

    def listed(self, ref: WorkspaceRef, view: str) -> tuple[list[Job], Workspace]:
        with self.in_workspace(ref) as (repo, workspace):
            return jobs.listed(repo, ref, view), workspace

    def cancel(self, ref: WorkspaceRef, name: str) -> Job:
        with self.store.transaction() as repo:
            return jobs.cancel(repo, ref, name, self.clock())

    def output_locations(self, ref: WorkspaceRef, asset_ids: list[str]) -> dict[str, dict]:
        """{uri, type} by asset id, for the ids that name a job output."""
        with self.in_workspace(ref) as (repo, _):
            return {asset_id: found for asset_id in asset_ids if (found := jobs.output_location(repo, ref, asset_id))}
