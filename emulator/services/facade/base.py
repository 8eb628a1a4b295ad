"""What every service of the api shares: the store, and a transaction in a workspace that must exist."""

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime

from emulator.domain.ids import WorkspaceRef
from emulator.services import workspaces
from emulator.settings import Settings
from emulator.store.db import Store
from emulator.store.repositories import Repository
from emulator.store.tables import Workspace


class Service:
    """A resource's use cases as the api calls them: each method runs one transaction and returns what the
    route shapes (rows, the workspace, created flags, operations)."""

    def __init__(self, settings: Settings, store: Store, secret: bytes, clock: Callable[[], datetime]):
        self.settings, self.store, self.secret, self.clock = settings, store, secret, clock

    @contextmanager
    def in_workspace(self, ref: WorkspaceRef) -> Iterator[tuple[Repository, Workspace]]:
        """A transaction, and the workspace `ref` names: NotFound when there is none."""
        with self.store.transaction() as repo:
            yield repo, workspaces.get(repo, ref)

    def _workspace(self, ref: WorkspaceRef) -> Workspace:
        with self.in_workspace(ref) as (_, workspace):
            return workspace
