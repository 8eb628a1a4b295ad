"""A workspace's default blob datastores as the api hands them out, and the account SAS listSecrets mints."""

from contextlib import suppress

from emulator.domain.ids import WorkspaceRef
from emulator.domain.storage import blob_access, datastores
from emulator.domain.storage.datastores import Datastore
from emulator.services.blobs import BlobStore
from emulator.services.facade.base import Service
from emulator.store.tables import Workspace


class Datastores(Service):
    def _served(self, stores: list[Datastore]) -> list[Datastore]:
        """The datastores, once their containers exist: the SDK uploads to a datastore it is handed."""
        blobs = BlobStore(self.settings.data_dir)
        for store in stores:
            with suppress(FileExistsError):  # a concurrent request made it first
                blobs.create_container(store.account, store.container)
        return stores

    def listed(self, ref: WorkspaceRef, is_default: bool | None) -> tuple[list[Datastore], Workspace]:
        workspace = self._workspace(ref)
        return self._served(datastores.listed(ref, is_default)), workspace

    def get(self, ref: WorkspaceRef, name: str) -> tuple[Datastore, Workspace]:
        workspace = self._workspace(ref)
        return self._served([datastores.get(ref, name)])[0], workspace

    def sas(self, ref: WorkspaceRef, name: str, body: object) -> str:
        """listSecrets: a SAS for the datastore's storage account, as Azure's account key opens all of it (the SDK
        reads a code version's own container with it), for as long as `body` asks (within limits)."""
        self._workspace(ref)
        store = datastores.get(ref, name)
        lifetime = datastores.secret_lifetime(body)
        self._served([store])
        return blob_access.mint_account(self.secret, store.account, self.clock(), lifetime=lifetime)
