"""ARM shape of a job schedule: its stored properties, enabled or not, always provisioned."""

from emulator.api.arm.envelope import system_data, workspace_id
from emulator.domain.ids import PROVIDER
from emulator.services.rows import Schedule, Workspace


def schedule(row: Schedule, workspace: Workspace) -> dict:
    props = {**row.body, "isEnabled": row.enabled, "provisioningState": "Succeeded"}
    return {"id": f"{workspace_id(workspace)}/schedules/{row.name}", "name": row.name,
            "type": f"{PROVIDER}/workspaces/schedules", "systemData": system_data(row.created_at, row.modified_at),
            "properties": props}
