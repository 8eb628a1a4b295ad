"""RunHistory shapes of a job, as `jobs.stream` and `jobs.download` read them: its run, details and outputs."""

import uuid
from datetime import datetime
from urllib.parse import quote

from emulator.api.arm.envelope import iso
from emulator.domain.compute import kubernetes
from emulator.domain.ids import WorkspaceRef
from emulator.domain.jobs import artifacts
from emulator.domain.storage import blob_access, datastores
from emulator.services.rows import Job, Workspace
from emulator.settings import Settings

_OUTPUT_TYPES = {"uri_file": "uri_file"}  # folders and models alike download as folders


def run_outputs(row: Job, workspace: Workspace) -> dict:
    """RunHistory's view of a job's named outputs: asset ids the data plane resolves to datastore URIs."""
    guid = datastores.workspace_guid(workspace.key)
    return {name: {"assetId": artifacts.output_asset_id(workspace.location, guid, row.name, name),
                   "type": _OUTPUT_TYPES.get(entry["jobOutputType"], "uri_folder")}
            for name, entry in row.body.get("outputs", {}).items()}


def _run_type(row: Job) -> str:
    return {"Sweep": "hyperdrive", "Pipeline": "azureml.PipelineRun"}.get(row.body.get("jobType"), "azureml.CommandJob")


def run(row: Job, workspace: Workspace) -> dict:
    """A RunHistory run (a child's names its parent, as `jobs.list(parent_job_name=...)` reads them)."""
    parent = row.parent_key.rsplit("/", 1)[-1] if row.parent_key else None
    target = kubernetes.shown_name(row.compute_key.rsplit("/", 1)[-1])
    return {"runId": row.name, "parentRunId": parent, "rootRunId": parent or row.name, "runUuid": str(uuid.uuid5(uuid.NAMESPACE_URL, row.key)), "status": row.status,
            "createdUtc": iso(row.created_at), "startTimeUtc": iso(row.started_at), "endTimeUtc": iso(row.ended_at),
            "experimentId": row.body.get("experimentName"), "displayName": row.body.get("displayName"),
            "target": target, "compute": {"target": target}, "tags": row.body.get("tags", {}),
            "properties": row.body.get("properties", {}), "error": {"error": row.error} if row.error else None,
            "outputs": run_outputs(row, workspace), "runType": _run_type(row), "attempt": row.attempt}


def _log_files(row: Job, ref: WorkspaceRef, settings: Settings, secret: bytes, now: datetime) -> dict[str, str]:
    """The job's log files that exist, as SAS URLs the SDK GETs without credentials."""
    where = artifacts.location(ref, row.name)
    folder = settings.data_dir / artifacts.blob_dir(where)
    if not folder.is_dir():
        return {}
    sas = blob_access.mint(secret, where.account, where.container, now, permissions="r")
    names = sorted(p.relative_to(folder).as_posix() for pattern in ("user_logs/*.txt", "azureml-logs/*.txt", "logs/azureml/*.txt")
                   for p in folder.glob(pattern))
    base = f"{settings.public_url}/blob/{where.account}/{where.container}/{where.blob}"
    return {name: f"{base}/{quote(name)}?{sas}" for name in names}


def run_details(row: Job, workspace: Workspace, settings: Settings, secret: bytes, now: datetime) -> dict:
    """What `jobs.stream` polls: the status, the log files, and the error of a failed job."""
    base = run(row, workspace)
    ref = WorkspaceRef.of(workspace)
    return {"runId": base["runId"], "runUuid": base["runUuid"], "status": row.status, "target": base["target"],
            "createdTimeUtc": base["createdUtc"], "startTimeUtc": base["startTimeUtc"],
            "endTimeUtc": base["endTimeUtc"], "error": base["error"],
            "warnings": [{"source": "Compute", "message": h["warning"]} for h in row.history if h.get("warning")],
            "tags": base["tags"], "properties": base["properties"],
            "logFiles": _log_files(row, ref, settings, secret, now), "runNumber": None}
