"""What every ARM document of a stored resource shares: timestamps, systemData, the workspace's id."""

from datetime import datetime

from emulator.domain.ids import WorkspaceRef
from emulator.services.rows import Workspace

SYSTEM_USER = "amlemu-user@amlemu.local"


def iso(moment: datetime | None) -> str | None:
    return moment.isoformat().replace("+00:00", "Z") if moment else None


def system_data(created: datetime, modified: datetime) -> dict:
    return {"createdAt": iso(created), "createdBy": SYSTEM_USER, "createdByType": "User",
            "lastModifiedAt": iso(modified), "lastModifiedBy": SYSTEM_USER, "lastModifiedByType": "User"}


def workspace_id(row: Workspace) -> str:
    return WorkspaceRef.of(row).arm_id
