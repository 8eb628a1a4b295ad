"""ARM shape of a job: its stored body with the read-only status and services the SDK reads back."""

from urllib.parse import quote

from emulator import tokens
from emulator.api.arm.envelope import system_data, workspace_id
from emulator.domain.compute import local
from emulator.domain.ids import PROVIDER
from emulator.domain.jobs import tracking
from emulator.domain.jobs.command_job import DEFAULT_EXPERIMENT, PRIVATE
from emulator.services.rows import Job, Workspace
from emulator.settings import Settings


def studio_url(settings: Settings, secret: bytes, arm_id: str) -> str:
    """The job's page on the emulator (the SDK's "Web View" link), signed: a browser sends no token."""
    return f"{settings.public_url}/studio{arm_id}?sig={tokens.link_signature(secret, arm_id)}"


def execution_url(settings: Settings, workspace: Workspace, experiment: str) -> str:
    """The emulator's Execution Service route that starts a local run (api/routes/execution.py)."""
    return (f"{settings.public_url}/execution/v1.0{workspace_id(workspace)}/experiments/{quote(experiment, safe='')}"
            "/localrun?api-version=2019-05-01")


def _local_service(row: Job, workspace: Workspace, settings: Settings) -> dict:
    """A local job's: where its client starts it, with the body to send (the SDK splits it at "&fake=")."""
    experiment = row.body.get("experimentName") or DEFAULT_EXPERIMENT
    endpoint = local.service_endpoint(execution_url(settings, workspace, experiment),
                                      local.execution_body(row.name, experiment, None))  # no snapshot ids here
    return {local.SERVICE: {"jobServiceType": local.SERVICE, "endpoint": endpoint, "status": None,
                            "errorMessage": None, "properties": None, "port": None}}


def job(row: Job, workspace: Workspace, settings: Settings, secret: bytes) -> dict:
    arm_id = f"{workspace_id(workspace)}/jobs/{row.name}"
    services = {"Studio": {"jobServiceType": "Studio", "endpoint": studio_url(settings, secret, arm_id),
                           "status": None, "errorMessage": None, "properties": None, "port": None},
                "Tracking": {"jobServiceType": "Tracking",
                             "endpoint": tracking.tracking_uri(settings.public_netloc, workspace_id(workspace)) + "?",
                             "status": None,
                             "errorMessage": None, "properties": None, "port": None}}
    if local.is_local_compute(row.compute_key.rsplit("/", 1)[-1]):
        services.update(_local_service(row, workspace, settings))
    shown = {k: v for k, v in row.body.items() if k not in PRIVATE}
    props = {**shown, "status": row.status, "services": services}
    return {"id": arm_id, "name": row.name, "type": f"{PROVIDER}/workspaces/jobs",
            "systemData": system_data(row.created_at, row.modified_at), "properties": props}
