"""ARM shapes of batch endpoints, their deployments, and the batch jobs invoking them makes: what the SDK reads."""

from emulator.api.arm.envelope import system_data, workspace_id
from emulator.api.arm.jobs import studio_url
from emulator.domain.ids import PROVIDER
from emulator.domain.jobs import tracking
from emulator.domain.storage import datastores
from emulator.services.rows import BatchDeployment, BatchEndpoint, Job, Workspace
from emulator.settings import Settings

PRINCIPAL_ID = "00000000-0000-0000-0000-0000000000b2"
TENANT_ID = "72f988bf-0000-0000-0000-00000000a4e1"
CREATION_API_VERSION = "2023-10-01"


def endpoint_id(workspace: Workspace, name: str) -> str:
    return f"{workspace_id(workspace)}/batchEndpoints/{name}"


def scoring_uri(settings: Settings, workspace: Workspace, name: str) -> str:
    """Where invocations are POSTed (and the endpoint's jobs listed): this emulator's data plane, on the api.
    Azure's is https://<endpoint>.<region>.inference.ml.azure.com/jobs."""
    return f"{settings.public_url}{endpoint_id(workspace, name)}/jobs"


def endpoint(row: BatchEndpoint, workspace: Workspace, settings: Settings) -> dict:
    body, arm_id = row.body, endpoint_id(workspace, row.name)
    props = {**body["properties"], "provisioningState": row.provisioning_state,
             "properties": {**body["properties"]["properties"], "BatchEndpointCreationApiVersion": CREATION_API_VERSION,
                            "azureml.onlineendpointid": arm_id},
             "scoringUri": scoring_uri(settings, workspace, row.name),
             "swaggerUri": f"{settings.public_url}{arm_id}/swagger"}
    return {"id": arm_id, "name": row.name, "type": f"{PROVIDER}/workspaces/batchEndpoints", "location": row.location,
            "kind": "", "tags": body["tags"],
            "identity": {**body["identity"], "principalId": PRINCIPAL_ID, "tenantId": TENANT_ID},
            "systemData": system_data(row.created_at, row.modified_at), "properties": props}


def deployment(row: BatchDeployment, parent: BatchEndpoint, workspace: Workspace) -> dict:
    body = row.body
    props = {k: v for k, v in body["properties"].items() if v is not None}
    return {"id": f"{endpoint_id(workspace, parent.name)}/deployments/{row.name}", "name": row.name,
            "type": f"{PROVIDER}/workspaces/batchEndpoints/deployments", "location": body["location"], "kind": "",
            "tags": body["tags"], "systemData": system_data(row.created_at, row.modified_at),
            "properties": {**props, "provisioningState": row.provisioning_state}}


def _datastore_path(workspace: Workspace, uri: str) -> str:
    """A datastore URI as Azure shows a batch job's output: an ARM path of the datastore."""
    store, _, path = uri.removeprefix("azureml://datastores/").partition("/paths/")
    if not uri.startswith("azureml://datastores/") or not path:
        return uri
    return f"{workspace_id(workspace)}/datastores/{store}/paths/{path}"


def _data(entry: dict) -> dict:
    """A job's input or output as a batch job shows it (UriFolder, UriFile, MLTable, Literal)."""
    if entry.get("jobInputType") == "literal":
        return {"jobInputType": "Literal", "value": entry.get("value")}
    kind = entry.get("jobInputType") or entry.get("jobOutputType")
    shown = {"uri_file": "UriFile", "mltable": "MLTable"}.get(kind, "UriFolder")
    return {"jobInputType" if "jobInputType" in entry else "jobOutputType": shown, "uri": entry.get("uri")}


def _scoring(row: Job, record: dict, workspace: Workspace) -> dict:
    """What a model deployment's job shows of its parallel settings and its one output file."""
    output, settings = record["output"], record["settings"]
    file_name = output["file_name"]
    return {"compute": {"target": row.body.get("computeId"), "instanceCount": settings["instance_count"],
                        "isLocal": False},
            "outputData": {record["output_name"]: {
                "jobOutputType": "UriFile", "mode": "ReadWriteMount",
                "uri": _datastore_path(workspace, output["folder"].rstrip("/") + "/" + file_name)}},
            "outputFileName": file_name, "miniBatchSize": settings["mini_batch_size"],
            "errorThreshold": settings["error_threshold"],
            "retrySettings": {"maxRetries": settings["max_retries"], "timeout": record["retry_timeout"]}}


def _pipeline(row: Job) -> dict:
    """What a pipeline component deployment's job shows: its compute, and its outputs by the component's names."""
    return {"compute": {"target": (row.body.get("settings") or {}).get("default_compute"), "isLocal": False},
            "outputData": {name: _data(entry) for name, entry in row.body.get("outputs", {}).items()}}


def job(row: Job, workspace: Workspace, settings: Settings, secret: bytes, deployment_level: bool = False) -> dict:
    """A batch job as invoke answers it and list_jobs lists it (Azure's BatchJobResource)."""
    record, ws_id = row.driver, workspace_id(workspace)
    owner = endpoint_id(workspace, record["endpoint"])
    if deployment_level:
        owner += f"/deployments/{record['deployment']}"
    props = {
        "status": row.status, "name": row.body.get("displayName"), "description": row.body.get("description"),
        "experimentName": row.body.get("experimentName"), "tags": row.body.get("tags", {}),
        "properties": row.body.get("properties", {}), "provisioningState": "Succeeded",
        "inputData": {name: _data(entry) for name, entry in row.body.get("inputs", {}).items()},
        **(_scoring(row, record, workspace) if "output" in record else _pipeline(row)),
        "output": {"datastoreId": f"{ws_id}/datastores/{datastores.ARTIFACT_STORE}",
                   "path": f"ExperimentRun/dcid.{row.name}"},
        "interactionEndpoints": {
            "Studio": {"jobEndpointType": "Studio", "endpoint": studio_url(settings, secret, f"{ws_id}/jobs/{row.name}")},
            "Tracking": {"jobEndpointType": "Tracking",
                         "endpoint": tracking.tracking_uri(settings.public_netloc, ws_id) + "?"}}}
    if row.error:
        props["error"] = row.error
    return {"id": f"{owner}/jobs/{row.name}", "name": row.name,
            "type": f"{PROVIDER}/workspaces/batchEndpoints/{'deployments/' if deployment_level else ''}jobs",
            "systemData": system_data(row.created_at, row.modified_at), "properties": props}
