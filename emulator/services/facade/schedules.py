"""Job schedules as the api calls them. Writing one is immediate: its operation is done when the answer goes."""

import copy

from emulator.domain.ids import WorkspaceRef
from emulator.domain.jobs import schedules as rules
from emulator.errors import EmulatorError
from emulator.services import operations, schedules
from emulator.services.external_data import ExternalData
from emulator.services.facade.base import Service
from emulator.store.repositories import Repository
from emulator.store.tables import Operation, Schedule, Workspace


class Schedules(Service):
    def put(self, ref: WorkspaceRef, name: str, body: object) -> tuple[Schedule, bool, Operation, Workspace]:
        outside = self._outside(ref, body)
        with self.in_workspace(ref) as (repo, workspace):
            row, created = schedules.put(repo, ref, name, body, self.clock(), self.settings.time_scale,
                                         self.settings.data_dir, outside)
            return row, created, self._done(repo, row.key, "Create" if created else "Update"), workspace

    def _outside(self, ref: WorkspaceRef, body: object) -> dict[str, str | None]:
        """Copies of a job definition's inputs outside the workspace, made before the transaction (a fetch must
        not hold the store's write lock). A body `parse` refuses is left for the transaction to refuse."""
        try:
            spec = rules.parse(copy.deepcopy(body))
        except EmulatorError:
            return {}
        return ExternalData.of(self.settings).copies_of(ref, spec.job) if spec.job else {}

    def _done(self, repo: Repository, key: str, action: str) -> Operation:
        op = operations.start(repo, key, action, self.clock())
        operations.finish(repo, key, self.clock())
        return op

    def get(self, ref: WorkspaceRef, name: str) -> tuple[Schedule, Workspace]:
        with self.in_workspace(ref) as (repo, workspace):
            return schedules.get(repo, ref, name), workspace

    def listed(self, ref: WorkspaceRef, view: str | None) -> tuple[list[Schedule], Workspace]:
        with self.in_workspace(ref) as (repo, workspace):
            return schedules.listed(repo, ref, view), workspace

    def delete(self, ref: WorkspaceRef, name: str) -> tuple[Operation | None, Workspace]:
        """The operation of the deletion, None when there was no such schedule."""
        with self.in_workspace(ref) as (repo, workspace):
            key = ref.child_id("schedules", name)
            return (self._done(repo, key, "Delete") if schedules.delete(repo, ref, name) else None), workspace
