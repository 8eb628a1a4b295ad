"""What the api serves under a subscription's location: core usage and long-running operations' status."""

from emulator.errors import NotFound
from emulator.services import usage
from emulator.services.facade.base import Service
from emulator.store.tables import Operation


class Locations(Service):
    def usages(self, subscription: str, location: str) -> list[dict]:
        with self.store.transaction() as repo:
            return usage.usages(repo, subscription, location)

    def operation(self, operation_id: str) -> Operation:
        with self.store.transaction() as repo:
            op = repo.operation(operation_id)
            if op is None:
                raise NotFound(f"Operation '{operation_id}' was not found.", target="operationId")
            return op
