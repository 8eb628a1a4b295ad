"""What the api serves under a subscription's location: core usage and quotas, long-running operations' status."""

from emulator.errors import NotFound
from emulator.services import quotas, usage, workspace_quotas, workspaces
from emulator.services.facade.base import Service
from emulator.services.facade.timeline import Timeline
from emulator.store.tables import Operation


class Locations(Service):
    def usages(self, subscription: str, location: str) -> list[dict]:
        with self.store.transaction() as repo:
            return usage.usages(repo, self.settings, subscription, location)

    def workspace_quotas(self, subscription: str, location: str) -> list[dict]:
        with self.store.reading() as repo:
            return workspace_quotas.listed(repo, self.settings, subscription, location)

    def update_workspace_quotas(self, subscription: str, body: object) -> list[dict]:
        with self.store.transaction() as repo:
            return workspace_quotas.update(repo, self.settings, subscription, body)

    def operation(self, operation_id: str) -> Operation:
        with self.store.transaction() as repo:
            op = repo.operation(operation_id)
            if op is None:
                raise NotFound(f"Operation '{operation_id}' was not found.", target="operationId")
            return op

    def _workspace_key(self, repo, workspace: str | None) -> str | None:
        return workspaces.get(repo, Timeline.ref(self, workspace)).key if workspace else None

    def quotas(self, workspace: str | None) -> dict:
        with self.store.reading() as repo:
            return {"workspace": workspace, **quotas.view(repo, self.settings, self._workspace_key(repo, workspace))}

    def set_quotas(self, workspace: str | None, body: object) -> dict:
        with self.store.transaction() as repo:
            quotas.set_override(repo, self._workspace_key(repo, workspace), body)
        return self.quotas(workspace)
