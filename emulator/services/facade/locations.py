"""What the api serves under a subscription's location: core usage and quotas, long-running operations' status."""

import random

from emulator.errors import NotFound
from emulator.services import capacity, quotas, usage, workspace_quotas, workspaces
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

    def capacity(self) -> dict:
        with self.store.reading() as repo:
            return capacity.view(repo, self.settings, self.clock())

    def short(self, body: object) -> dict:
        """A shortage from now (for a while, or until restored)."""
        with self.store.transaction() as repo:
            capacity.add(repo, self.settings, body, self.clock())
        return self.capacity()

    def restore(self) -> dict:
        with self.store.transaction() as repo:
            capacity.restore(repo, self.clock())
        return self.capacity()

    def set_capacity_schedule(self, body: object) -> dict:
        with self.store.transaction() as repo:
            capacity.set_schedule(repo, body, self.clock(), random.Random())
        return self.capacity()
