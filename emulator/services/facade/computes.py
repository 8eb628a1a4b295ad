"""Computes as the api calls them: CRUD, listNodes and the compute-instance actions."""

from dataclasses import dataclass
from pathlib import Path

from emulator.domain import names
from emulator.domain.compute import local
from emulator.domain.ids import WorkspaceRef
from emulator.runtime import hosts
from emulator.services import attached, computes, kubernetes, quotas
from emulator.services.facade.base import Service
from emulator.store.repositories import Repository
from emulator.store.tables import Compute, Node, Operation, Workspace


@dataclass(frozen=True)
class ComputeView:
    """What a compute's ARM document is made of."""
    row: Compute
    nodes: list[Node]
    workspace: Workspace
    runs_on: str | None = None  # attached compute: where its work runs (services/kubernetes.py)


def _view(repo: Repository, row: Compute, workspace: Workspace, data_dir: Path) -> ComputeView:
    runs_on = None
    if row.compute_type in computes.ATTACHABLE_TYPES:
        runs_on = kubernetes.status_text(data_dir, row.body["properties"]["resourceId"])
    return ComputeView(row, repo.nodes(row.key), workspace, runs_on)


class Computes(Service):
    host_check: attached.HostCheck = staticmethod(hosts.check)  # an attached VM's host, before it is accepted

    def listed(self, ref: WorkspaceRef) -> list[ComputeView]:
        with self.in_workspace(ref) as (repo, workspace):
            return [_view(repo, row, workspace, self.settings.data_dir) for row in repo.computes(ref.key)
                    if not local.is_hidden(row.name)]

    def get(self, ref: WorkspaceRef, name: str) -> ComputeView:
        with self.in_workspace(ref) as (repo, workspace):
            return _view(repo, computes.get(repo, ref, name), workspace, self.settings.data_dir)

    def put(self, ref: WorkspaceRef, name: str, body: object) -> tuple[ComputeView, Operation, bool]:
        names.compute_name(name)
        attachment = attached.checked(body, self.secret, self.host_check)
        with self.in_workspace(ref) as (repo, workspace):
            row, op, created = computes.put(repo, ref, workspace, name, body, self.clock(), attachment,
                                            self.settings.data_dir)
            if attachment is None and row.compute_type not in computes.ATTACHABLE_TYPES:  # attached: no quota
                quotas.admit(repo, self.settings, row, created)
            return _view(repo, row, workspace, self.settings.data_dir), op, created

    def patch_scale(self, ref: WorkspaceRef, name: str, body: object) -> tuple[ComputeView, Operation]:
        with self.in_workspace(ref) as (repo, workspace):
            row, op = computes.patch_scale(repo, ref, workspace, name, body, self.clock())
            quotas.admit(repo, self.settings, row, False)
            return _view(repo, row, workspace, self.settings.data_dir), op

    def delete(self, ref: WorkspaceRef, name: str) -> tuple[Compute, Operation] | None:
        """None when there was no such compute."""
        with self.in_workspace(ref) as (repo, _):
            return computes.delete(repo, ref, name, self.clock())

    def update_idle_shutdown(self, ref: WorkspaceRef, name: str, body: object) -> None:
        with self.in_workspace(ref) as (repo, _):
            computes.update_idle_shutdown(repo, ref, name, body, self.clock())

    def nodes(self, ref: WorkspaceRef, name: str) -> list[Node]:
        with self.in_workspace(ref) as (repo, _):
            row = computes.get(repo, ref, name)
            return repo.nodes(row.key) if row.compute_type == "AmlCompute" else []  # an instance's agent is no node

    def act(self, ref: WorkspaceRef, name: str, verb: str) -> tuple[Compute, Operation]:
        """Start, Stop or Restart a compute instance."""
        with self.in_workspace(ref) as (repo, _):
            return computes.act(repo, ref, name, verb, self.clock())
