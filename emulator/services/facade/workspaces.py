"""Workspaces as the api calls them, and the ARM template deployments that create them."""

from emulator.domain.ids import WorkspaceRef
from emulator.domain.storage import blob_access
from emulator.services import account_migration, diagnose, workspace_delete, workspaces
from emulator.services.blobs import BlobStore
from emulator.services.facade.base import Service
from emulator.store.tables import Workspace


class Workspaces(Service):
    def prepare(self) -> None:
        """As the api starts: the default workspace, and data of earlier versions moved to one storage account
        per workspace."""
        with self.store.transaction() as repo:
            workspaces.ensure_default(repo, self.settings, self.clock())
            account_migration.migrate(repo, self.settings.data_dir)

    def listed(self, subscription: str, resource_group: str | None = None) -> list[Workspace]:
        with self.store.transaction() as repo:
            return repo.workspaces(subscription, resource_group)

    def subscriptions(self) -> list[str]:
        """The default workspace's subscription first, then the others that hold a workspace."""
        with self.store.transaction() as repo:
            held = repo.subscriptions()
        default = self.settings.subscription_id
        return [default] + sorted({s.lower(): s for s in held if s.lower() != default.lower()}.values())

    def get(self, ref: WorkspaceRef) -> Workspace:
        return self._workspace(ref)

    def put(self, ref: WorkspaceRef, body: object) -> tuple[Workspace, bool]:
        with self.store.transaction() as repo:
            return workspaces.put(repo, ref, body, self.clock())

    def patch(self, ref: WorkspaceRef, body: object) -> Workspace:
        with self.store.transaction() as repo:
            return workspaces.patch(repo, ref, body, self.clock())

    def delete(self, ref: WorkspaceRef) -> bool:
        """False when there was no such workspace."""
        with self.store.transaction() as repo:
            found = workspace_delete.delete(repo, ref, self.clock())
        if found:  # its storage account goes with it (the controller forgets its jobs once they have ended)
            BlobStore(self.settings.data_dir).drop_account(blob_access.workspace_account(ref))
        return found

    def from_template(self, subscription: str, resource_group: str, body: object) -> Workspace:
        with self.store.transaction() as repo:
            return workspaces.from_template(repo, subscription, resource_group, body, self.clock())

    def resync_keys(self, ref: WorkspaceRef) -> None:
        """Azure copies rotated storage keys into the workspace; amlemu's credentials are minted from its token key
        on each request, so there is nothing stale to copy: the workspace must exist, that is all."""
        self._workspace(ref)

    def diagnose(self, ref: WorkspaceRef) -> dict:
        """The checks of services/diagnose.py, run now (outside any transaction: they touch files and a server)."""
        self._workspace(ref)
        return diagnose.diagnose(self.settings, ref)
