"""Code, environment, model, data and component assets as the api calls them: containers, versions, hash lookup,
uploads."""

from collections.abc import Callable

from emulator.domain.assets import versioned as rules
from emulator.domain.ids import WorkspaceRef
from emulator.services import assets, components, curated, models
from emulator.services.facade.base import Service
from emulator.store.repositories import Repository
from emulator.store.tables import AssetVersion, Workspace


class Assets(Service):
    def containers(self, ref: WorkspaceRef, kind: str, view: str) -> tuple[list[list[AssetVersion]], Workspace]:
        """Each asset's versions, oldest first."""
        with self.in_workspace(ref) as (repo, workspace):
            return list(assets.containers(repo, ref, kind, view).values()), workspace

    def container(self, ref: WorkspaceRef, kind: str, name: str) -> tuple[list[AssetVersion], Workspace]:
        with self.in_workspace(ref) as (repo, workspace):
            curated.offer(repo, ref, kind, name, self.clock())
            return assets.container(repo, ref, kind, name), workspace

    def set_archived(self, ref: WorkspaceRef, kind: str, name: str,
                     body: object) -> tuple[list[AssetVersion], Workspace]:
        with self.in_workspace(ref) as (repo, workspace):
            return assets.set_archived(repo, ref, kind, name, body, self.clock()), workspace

    def get(self, ref: WorkspaceRef, kind: str, name: str, version: str) -> tuple[AssetVersion, Workspace]:
        with self.in_workspace(ref) as (repo, workspace):
            curated.offer(repo, ref, kind, name, self.clock())
            return assets.get(repo, ref, kind, name, version), workspace

    def put(self, ref: WorkspaceRef, kind: str, name: str, version: str,
            body: object) -> tuple[AssetVersion, bool, Workspace]:
        with self.in_workspace(ref) as (repo, workspace):
            if kind == assets.COMPONENTS:
                row, created = components.put(repo, ref, name, version, body, self.clock(), self.settings.data_dir)
            else:
                row, created = assets.put(repo, ref, kind, name, version, body, self.clock(), self.settings.data_dir)
            return row, created, workspace

    def _versions(self, ref: WorkspaceRef, query: rules.ListQuery,
                  rows_of: Callable[[Repository], list[AssetVersion]]) -> tuple[list[AssetVersion], Workspace]:
        with self.in_workspace(ref) as (repo, workspace):
            return assets.select(rows_of(repo), query), workspace

    def code_versions(self, ref: WorkspaceRef, name: str, query: rules.ListQuery, content_hash: str | None,
                      hash_version: str | None) -> tuple[list[AssetVersion], Workspace]:
        """With `content_hash`, the SDK's dedupe lookup: matches across every code asset, whatever `name` says."""
        return self._versions(ref, query, lambda repo: assets.find_by_hash(repo, ref, assets.CODES, content_hash,
                                                                           hash_version)
                              if content_hash is not None else assets.versions(repo, ref, assets.CODES, name))

    def environment_versions(self, ref: WorkspaceRef, name: str,
                             query: rules.ListQuery) -> tuple[list[AssetVersion], Workspace]:
        def rows(repo: Repository) -> list[AssetVersion]:
            curated.offer(repo, ref, assets.ENVIRONMENTS, name, self.clock())
            return assets.versions(repo, ref, assets.ENVIRONMENTS, name)
        return self._versions(ref, query, rows)

    def model_versions(self, ref: WorkspaceRef, name: str, query: rules.ListQuery,
                       stage: str | None) -> tuple[list[AssetVersion], Workspace]:
        return self._versions(ref, query,
                              lambda repo: models.in_stage(assets.versions(repo, ref, assets.MODELS, name), stage))

    def versions(self, ref: WorkspaceRef, kind: str, name: str,
                 query: rules.ListQuery) -> tuple[list[AssetVersion], Workspace]:
        """A data asset's or a component's versions."""
        return self._versions(ref, query, lambda repo: assets.versions(repo, ref, kind, name))

    def start_pending_upload(self, ref: WorkspaceRef, name: str, version: str, body: object) -> dict:
        workspace = self._workspace(ref)
        return assets.start_pending_upload(self.settings, self.secret, ref, workspace, name, version, body,
                                           self.clock())
