"""Batch endpoints and their deployments as the api calls them: CRUD, invoke, and the jobs they made."""

import uuid
from dataclasses import dataclass

from emulator.domain.ids import WorkspaceRef
from emulator.domain.serving import batch_jobs
from emulator.errors import EmulatorError
from emulator.services import batch_endpoints, batch_invoke, workspaces
from emulator.services.external_data import ExternalData
from emulator.services.facade.base import Service
from emulator.store.tables import BatchDeployment, BatchEndpoint, Job, Operation, Workspace


class BatchEndpoints(Service):
    def listed(self, ref: WorkspaceRef) -> tuple[list[BatchEndpoint], Workspace]:
        with self.in_workspace(ref) as (repo, workspace):
            return repo.batch_endpoints(ref.key), workspace

    def get(self, ref: WorkspaceRef, name: str) -> tuple[BatchEndpoint, Workspace]:
        with self.in_workspace(ref) as (repo, workspace):
            return batch_endpoints.get_endpoint(repo, ref, name), workspace

    def put(self, ref: WorkspaceRef, name: str, body: object) -> tuple[BatchEndpoint, Operation, bool, Workspace]:
        with self.in_workspace(ref) as (repo, workspace):
            row, op, created = batch_endpoints.put_endpoint(repo, ref, workspace, name, body, self.clock())
            return row, op, created, workspace

    def delete(self, ref: WorkspaceRef, name: str) -> tuple[BatchEndpoint, Operation] | None:
        """None when there was no such endpoint."""
        with self.in_workspace(ref) as (repo, _):
            return batch_endpoints.delete_endpoint(repo, ref, name, self.clock())

    def invoke(self, ref: WorkspaceRef, name: str, deployment: str | None, body: object) -> tuple[Job, Workspace]:
        outside = self._outside(ref, body)
        with self.in_workspace(ref) as (repo, workspace):
            job = batch_invoke.invoke(repo, ref, name, deployment, body, self.clock(), str(uuid.uuid4()),
                                      self.settings.data_dir, outside)
            return job, workspace

    def _outside(self, ref: WorkspaceRef, body: object) -> dict[str, str | None]:
        """Copies of inputs outside the workspace, made before the transaction (a fetch must not hold the store's
        write lock); a body the transaction will refuse is left to it."""
        with self.store.reading() as repo:
            workspaces.get(repo, ref)
        try:
            inputs = batch_jobs.parsed(body).inputs
        except EmulatorError:
            return {}
        try:
            return ExternalData.of(self.settings).copies(ref, inputs)
        except EmulatorError as exc:  # said of a job's input: here it is the invocation's
            exc.target = (exc.target or "").replace("properties.inputs.", f"{batch_jobs.INPUTS}.") or None
            raise

    def jobs(self, ref: WorkspaceRef, name: str, deployment: str | None = None) -> tuple[list[Job], Workspace]:
        with self.in_workspace(ref) as (repo, workspace):
            return batch_invoke.listed(repo, ref, name, deployment), workspace


@dataclass(frozen=True)
class DeploymentView:
    """What a deployment's ARM document is made of."""
    row: BatchDeployment
    endpoint: BatchEndpoint
    workspace: Workspace


class BatchDeployments(Service):
    def listed(self, ref: WorkspaceRef, endpoint: str) -> list[DeploymentView]:
        with self.in_workspace(ref) as (repo, workspace):
            parent = batch_endpoints.get_endpoint(repo, ref, endpoint)
            return [DeploymentView(row, parent, workspace) for row in repo.batch_deployments(parent.key)]

    def get(self, ref: WorkspaceRef, endpoint: str, name: str) -> DeploymentView:
        with self.in_workspace(ref) as (repo, workspace):
            row = batch_endpoints.get_deployment(repo, ref, endpoint, name)
            return DeploymentView(row, batch_endpoints.get_endpoint(repo, ref, endpoint), workspace)

    def put(self, ref: WorkspaceRef, endpoint: str, name: str, body: object) -> tuple[DeploymentView, Operation, bool]:
        with self.in_workspace(ref) as (repo, workspace):
            row, op, created = batch_endpoints.put_deployment(repo, self.settings, ref, endpoint, name, body,
                                                              self.clock())
            return DeploymentView(row, batch_endpoints.get_endpoint(repo, ref, endpoint), workspace), op, created

    def delete(self, ref: WorkspaceRef, endpoint: str, name: str) -> tuple[BatchDeployment, Operation] | None:
        """None when there was no such deployment."""
        with self.in_workspace(ref) as (repo, _):
            return batch_endpoints.delete_deployment(repo, ref, endpoint, name, self.clock())
