"""Registries as the api calls them: ARM create, read, list and delete of the user's own; discovery; each asset
kind's containers and versions (the built-in `azureml` registry's from its catalogue, a user registry's from the
store, as services/assets keeps a workspace's), uploads and imports."""

from collections.abc import Callable, Iterator
from contextlib import contextmanager

from emulator.domain.assets import versioned as rules
from emulator.domain.registries import builtin, ids
from emulator.domain.registries.ids import RegistryRef
from emulator.domain.storage import blob_access
from emulator.services import assets, components, operations, registries, registry_assets
from emulator.services.blobs import BlobStore
from emulator.services.facade.base import Service
from emulator.store.repositories import Repository
from emulator.store.tables import AssetVersion, Operation, Registry

Versions = tuple[list, RegistryRef]  # builtin.Asset or AssetVersion rows: both shaped by api/arm/registries


class Registries(Service):
    # ARM: the user's own registries
    def put(self, ref: RegistryRef, body: object) -> tuple[Registry, Operation, bool]:
        """Provisioning is done when the PUT returns; the operation it reports is finished already."""
        with self.store.transaction() as repo:
            row, created = registries.put(repo, ref, body, self.clock())
            op = operations.start(repo, row.key, "Create" if created else "Update", self.clock())
            operations.finish(repo, row.key, self.clock())
            return row, op, created

    def get(self, ref: RegistryRef) -> Registry:
        with self.store.transaction() as repo:
            return registries.get(repo, ref)

    def listed(self, subscription: str, resource_group: str | None = None) -> list[Registry]:
        with self.store.transaction() as repo:
            return registries.listed(repo, subscription, resource_group)

    def delete(self, ref: RegistryRef) -> tuple[Registry, Operation] | None:
        """The registry and its assets; None when there was none. Its files go once that is committed."""
        with self.store.transaction() as repo:
            row = registries.delete(repo, ref)
            if row is None:
                return None
            op = operations.start(repo, row.key, "Delete", self.clock())
            operations.finish(repo, row.key, self.clock())
        BlobStore(self.settings.data_dir).drop_account(blob_access.registry_account(registries.ref_of(row)))
        return row, op

    # the data plane
    def discovery(self, name: str) -> dict:
        with self.store.transaction() as repo:
            return registries.discovery(repo, self.settings, name)

    @contextmanager
    def _scoped(self, asked: RegistryRef) -> Iterator[tuple[Repository, RegistryRef]]:
        with self.store.transaction() as repo:
            yield repo, registries.scoped(repo, self.settings, asked)

    def _read(self, asked: RegistryRef, of_builtin: Callable[[], object],
              of_user: Callable[[Repository, RegistryRef], object]) -> tuple:
        with self._scoped(asked) as (repo, ref):
            return (of_builtin() if registries.is_builtin(ref) else of_user(repo, ref)), ref

    def containers(self, asked: RegistryRef, kind: str, view: str) -> tuple[list[list], RegistryRef]:
        """Each asset's versions, oldest first; with the registry as found (its own spelling)."""
        return self._read(asked, lambda: builtin.containers(kind, view),
                          lambda repo, ref: list(assets.containers(repo, ref, kind, view).values()))

    def container(self, asked: RegistryRef, kind: str, name: str) -> Versions:
        return self._read(asked, lambda: builtin.container(kind, name),
                          lambda repo, ref: assets.container(repo, ref, kind, name))

    def versions(self, asked: RegistryRef, kind: str, name: str, query: rules.ListQuery) -> Versions:
        return self._read(asked, lambda: assets.select(builtin.container(kind, name), query),
                          lambda repo, ref: assets.select(assets.versions(repo, ref, kind, name), query))

    def version(self, asked: RegistryRef, kind: str, name: str, version: str) -> tuple:
        return self._read(asked, lambda: builtin.version(kind, name, version),
                          lambda repo, ref: assets.get(repo, ref, kind, name, version))

    @contextmanager
    def _writing(self, asked: RegistryRef, kind: str, action: str) -> Iterator[tuple[Repository, RegistryRef]]:
        """A write: the built-in registry refuses them all."""
        with self._scoped(asked) as (repo, ref):
            if registries.is_builtin(ref):
                raise builtin.refused(ref, kind, action)
            yield repo, ref

    def put_version(self, asked: RegistryRef, kind: str, name: str, version: str,
                    body: object) -> tuple[AssetVersion, bool, RegistryRef]:
        with self._writing(asked, kind, "versions/write") as (repo, ref):
            if kind == assets.COMPONENTS:
                row, created = components.put(repo, ref, name, version, body, self.clock(), self.settings.data_dir)
            else:
                row, created = registry_assets.put(repo, ref, kind, name, version, body, self.clock(),
                                                   self.settings.data_dir)
            return row, created, ref

    def set_archived(self, asked: RegistryRef, kind: str, name: str, body: object) -> Versions:
        """The SDK's archive or restore of a whole asset."""
        with self._writing(asked, kind, "write") as (repo, ref):
            return assets.set_archived(repo, ref, kind, name, body, self.clock()), ref

    def temporary_reference(self, asked: RegistryRef, name: str, version: str, body: object) -> dict:
        """The container a create in a registry uploads its files to, asked for before the version's PUT."""
        with self._writing(asked, "tempdatarefs", "write") as (_, ref):
            return registry_assets.temporary_reference(self.settings, self.secret, ref, name, version, body,
                                                       self.clock())

    def read_reference(self, asked: RegistryRef, name: str, version: str, body: object) -> dict:
        kind = ids.asset_id_kind(body)
        with self._scoped(asked) as (repo, ref):
            return registry_assets.read_reference(self.settings, self.secret, repo, ref, kind, name, version,
                                                  self.clock())

    def import_asset(self, asked: RegistryRef, body: object) -> tuple[Operation, RegistryRef]:
        """A workspace asset copied into the registry (share); done when the POST returns."""
        with self._writing(asked, "import", "action") as (repo, ref):
            row = registry_assets.import_asset(repo, self.settings, ref, body, self.clock())
            op = operations.start(repo, row.key, "Import", self.clock())
            operations.finish(repo, row.key, self.clock())
            return op, ref

    def operation(self, asked: RegistryRef, operation_id: str) -> Operation:
        with self._scoped(asked) as (repo, _):
            op = repo.operation(operation_id)
            if op is None:
                raise registries.unknown_operation(operation_id)
            return op
