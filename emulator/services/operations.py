"""ARM long-running operations: opened by the api, finished by whoever completes the work."""

import uuid
from datetime import datetime

from emulator.store.repositories import Repository
from emulator.store.tables import Operation


def start(repo: Repository, resource_key: str, action: str, now: datetime) -> Operation:
    op = Operation(id=str(uuid.uuid4()), resource_key=resource_key.lower(), action=action,
                   status="InProgress", created_at=now)
    repo.add(op)
    return op


def finish(repo: Repository, resource_key: str, now: datetime, status: str = "Succeeded",
           error: dict | None = None) -> None:
    for op in repo.open_operations(resource_key):
        op.status, op.error, op.finished_at = status, error, now
