"""Invoking a pipeline component deployment: the deployment's pinned component run as a pipeline job
(domain/serving/batch_pipelines.py makes its body; services/pipelines.py checks and stores it as any pipeline job,
each step tried as a dry run, so an invocation that could never run is refused naming its field and nothing is
made). The job's driver record also names the endpoint and deployment, so the endpoint lists it."""

from datetime import datetime
from pathlib import Path

from emulator.domain.ids import WorkspaceRef
from emulator.domain.serving import batch_pipelines
from emulator.domain.serving.batch_jobs import INPUTS, OUTPUTS, Invocation
from emulator.errors import EmulatorError
from emulator.services import components, pipelines
from emulator.store.repositories import Repository
from emulator.store.tables import BatchDeployment, BatchEndpoint, Job

CONFIG = "properties.deploymentConfiguration"
# What services/pipelines.py says of the pipeline job's fields, said of the invocation's or the deployment's.
_FIELDS = (("properties.inputs.", f"{INPUTS}."), ("properties.outputs.", f"{OUTPUTS}."),
           ("properties.settings.", f"{CONFIG}.settings."))


def _said_of_invocation(exc: EmulatorError) -> EmulatorError:
    message, target = exc.message, exc.target or ""
    for job_field, own in _FIELDS:
        message, target = message.replace(job_field, own), target.replace(job_field, own)
    return type(exc)(message, target=target or None)


def invoke(repo: Repository, ref: WorkspaceRef, endpoint: BatchEndpoint, deployment: BatchDeployment,
           invocation: Invocation, name: str, now: datetime, data_dir: Path | None,
           outside: dict[str, str | None] | None) -> Job:
    config = deployment.body["properties"]["deploymentConfiguration"]
    found = components.resolve(repo, ref, config["componentId"]["assetId"], f"{CONFIG}.componentId.assetId")
    compute = deployment.body["refs"]["compute"]
    body = batch_pipelines.job_body(name, endpoint.name, deployment.name, found.row.body["componentSpec"],
                                    f"{ref.arm_id}/computes/{compute}" if compute else None, config["settings"],
                                    invocation)
    try:
        job, _ = pipelines.put(repo, ref, name, body, now, data_dir, outside)
    except EmulatorError as exc:
        raise _said_of_invocation(exc) from exc
    job.driver = {**job.driver, "endpoint": endpoint.name, "endpoint_key": endpoint.key,
                  "deployment": deployment.name}
    return job
