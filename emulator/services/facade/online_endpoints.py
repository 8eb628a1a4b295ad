"""Online endpoints and their deployments as the api calls them: CRUD, keys, tokens and logs."""

from dataclasses import dataclass

from emulator.domain.ids import WorkspaceRef
from emulator.services import endpoints
from emulator.services.facade.base import Service
from emulator.store.tables import OnlineDeployment, OnlineEndpoint, Operation, Workspace


class OnlineEndpoints(Service):
    def listed(self, ref: WorkspaceRef) -> tuple[list[OnlineEndpoint], Workspace]:
        with self.in_workspace(ref) as (repo, workspace):
            return repo.online_endpoints(ref.key), workspace

    def get(self, ref: WorkspaceRef, name: str) -> tuple[OnlineEndpoint, Workspace]:
        with self.in_workspace(ref) as (repo, workspace):
            return endpoints.get_endpoint(repo, ref, name), workspace

    def put(self, ref: WorkspaceRef, name: str, body: object) -> tuple[OnlineEndpoint, Operation, bool, Workspace]:
        with self.in_workspace(ref) as (repo, workspace):
            row, op, created = endpoints.put_endpoint(repo, ref, workspace, name, body, self.clock())
            return row, op, created, workspace

    def delete(self, ref: WorkspaceRef, name: str) -> tuple[OnlineEndpoint, Operation] | None:
        """None when there was no such endpoint."""
        with self.in_workspace(ref) as (repo, _):
            return endpoints.delete_endpoint(repo, ref, name, self.clock())

    def keys(self, ref: WorkspaceRef, name: str) -> dict:
        with self.in_workspace(ref) as (repo, _):
            return endpoints.keys(repo, ref, name)

    def regenerate_key(self, ref: WorkspaceRef, name: str, body: object) -> tuple[OnlineEndpoint, Operation]:
        with self.in_workspace(ref) as (repo, _):
            return endpoints.regenerate_key(repo, ref, name, body, self.clock())

    def token(self, ref: WorkspaceRef, name: str) -> dict:
        with self.in_workspace(ref) as (repo, _):
            return endpoints.token(repo, ref, name, self.secret, self.clock())


@dataclass(frozen=True)
class DeploymentView:
    """What a deployment's ARM document is made of."""
    row: OnlineDeployment
    endpoint: OnlineEndpoint
    workspace: Workspace


class OnlineDeployments(Service):
    def listed(self, ref: WorkspaceRef, endpoint: str) -> list[DeploymentView]:
        with self.in_workspace(ref) as (repo, workspace):
            parent = endpoints.get_endpoint(repo, ref, endpoint)
            return [DeploymentView(row, parent, workspace) for row in repo.online_deployments(parent.key)]

    def get(self, ref: WorkspaceRef, endpoint: str, name: str) -> DeploymentView:
        with self.in_workspace(ref) as (repo, workspace):
            row = endpoints.get_deployment(repo, ref, endpoint, name)
            return DeploymentView(row, endpoints.get_endpoint(repo, ref, endpoint), workspace)

    def put(self, ref: WorkspaceRef, endpoint: str, name: str, body: object) -> tuple[DeploymentView, Operation, bool]:
        with self.in_workspace(ref) as (repo, workspace):
            row, op, created = endpoints.put_deployment(repo, self.settings, ref, endpoint, name, body, self.clock())
            return DeploymentView(row, endpoints.get_endpoint(repo, ref, endpoint), workspace), op, created

    def delete(self, ref: WorkspaceRef, endpoint: str, name: str) -> tuple[OnlineDeployment, Operation] | None:
        """None when there was no such deployment."""
        with self.in_workspace(ref) as (repo, _):
            return endpoints.delete_deployment(repo, ref, endpoint, name, self.clock())

    def logs(self, ref: WorkspaceRef, endpoint: str, name: str, body: object) -> dict:
        with self.in_workspace(ref) as (repo, _):
            row = endpoints.get_deployment(repo, ref, endpoint, name)
            parent = endpoints.get_endpoint(repo, ref, endpoint)
        return endpoints.logs(self.settings, row, parent, body)
