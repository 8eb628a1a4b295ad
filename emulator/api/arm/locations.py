"""ARM shape of a long-running operation's status, polled under its location."""

from emulator.api.arm.envelope import iso
from emulator.domain.ids import location_id
from emulator.services.rows import Operation


def operation(op: Operation, subscription: str, location: str) -> dict:
    return {"id": f"{location_id(subscription, location)}/computeOperationsStatus/{op.id}", "name": op.id,
            "status": op.status, "startTime": iso(op.created_at), "endTime": iso(op.finished_at),
            "error": op.error}
