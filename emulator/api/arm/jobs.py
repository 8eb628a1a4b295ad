"""ARM shape of a job: its stored body with the read-only status and services the SDK reads back."""

from emulator.api.arm.envelope import system_data, workspace_id
from emulator.domain.ids import PROVIDER
from emulator.services.rows import Job, Workspace
from emulator.settings import Settings


def job(row: Job, workspace: Workspace, settings: Settings) -> dict:
    arm_id = f"{workspace_id(workspace)}/jobs/{row.name}"
    services = {"Studio": {"jobServiceType": "Studio", "endpoint": f"{settings.public_url}/studio{arm_id}",
                           "status": None, "errorMessage": None, "properties": None, "port": None},
                "Tracking": {"jobServiceType": "Tracking", "endpoint": f"azureml://{workspace.location}"
                             f".api.azureml.ms/mlflow/v1.0{workspace_id(workspace)}?", "status": None,
                             "errorMessage": None, "properties": None, "port": None}}
    props = {**row.body, "status": row.status, "services": services}
    return {"id": arm_id, "name": row.name, "type": f"{PROVIDER}/workspaces/jobs",
            "systemData": system_data(row.created_at, row.modified_at), "properties": props}
