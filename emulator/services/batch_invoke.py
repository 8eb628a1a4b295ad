"""Invoking a batch endpoint: the batch job, checked now so that what could never run is refused naming the field
and nothing is made; its one step, the parallel command job, is made by its driver (services/batch_driver.py).

A batch job is a parent job (domain/jobs/children.py) whose driver record holds what the step needs: the
deployment's parallel settings with the invocation's overrides, its model, code, environment and cluster, the input
(resolved: a data asset's files, a copy of data outside the workspace) and where the output file goes.
"""

from collections.abc import Callable
from dataclasses import asdict, replace
from datetime import datetime
from pathlib import Path

from emulator.domain.ids import WorkspaceRef
from emulator.domain.jobs import parallel, pipeline_steps
from emulator.domain.jobs.parallel import ParallelSettings
from emulator.domain.jobs.status import JobStatus
from emulator.domain.serving import batch_deployments as deployment_rules
from emulator.domain.serving import batch_endpoints as endpoint_rules
from emulator.domain.serving import batch_jobs as rules
from emulator.domain.serving.deployments import AssetRef
from emulator.domain.storage import datastores
from emulator.errors import EmulatorError, ValidationFailed
from emulator.services import batch_endpoints, batch_pipeline_invoke, computes, data, endpoints, jobs
from emulator.store.repositories import Repository
from emulator.store.tables import BatchDeployment, BatchEndpoint, Compute, Job

KIND = "batch"
BodyMaker = Callable[..., dict]  # parallel.command_body's signature
# An MLflow model deployed with no environment scores in this curated one (scikit-learn, pandas, MLflow); Azure
# builds one from the model's own conda file instead.
MLFLOW_ENVIRONMENT = "azureml://registries/azureml/environments/sklearn-1.5/labels/latest"


def _deployment(repo: Repository, ref: WorkspaceRef, endpoint: BatchEndpoint, header: str | None) -> BatchDeployment:
    rows = {row.name: row for row in repo.batch_deployments(endpoint.key)}
    return rows[endpoint_rules.chosen(header, endpoint.body, rows, endpoint.name)]


def _input(repo: Repository, ref: WorkspaceRef, invocation: rules.Invocation, data_dir: Path | None,
           outside: dict[str, str | None]) -> tuple[str, dict]:
    """The one input a model deployment scores, with the datastore path it reads; not empty."""
    if len(invocation.inputs) != 1:
        raise ValidationFailed(f"{rules.INPUTS} names {len(invocation.inputs)} inputs; a model deployment scores one "
                               "(input=Input(...)).", target=rules.INPUTS)
    (name, entry), = invocation.inputs.items()
    if entry["jobInputType"] == "literal":
        raise ValidationFailed(f"{rules.INPUTS}.{name} is a literal; a model deployment scores data (a UriFolder, "
                               "UriFile or MLTable input).", target=f"{rules.INPUTS}.{name}.jobInputType")
    target = f"{rules.INPUTS}.{name}.uri"
    try:
        resolved = data.input_uris(repo, ref, {name: entry}, data_dir, outside)
    except ValidationFailed as exc:  # said of a job's input: here it is the invocation's
        raise ValidationFailed(exc.message.replace(f"properties.inputs.{name}.uri", target), target=target) from exc
    uri = resolved.get(name, entry["uri"])
    if data_dir is not None:
        where = data_dir / _blob_dir(ref, uri, target)
        found = where.is_file() if entry["jobInputType"] == "uri_file" else \
            where.is_dir() and any(p.is_file() for p in where.rglob("*"))
        if not found:
            what = "file" if entry["jobInputType"] == "uri_file" else "folder with files in it"
            raise ValidationFailed(f"{target}: the input is empty: {entry['uri']} is not a {what}; there is nothing "
                                   "to score.", target=target)
    return name, {**entry, "uri": uri}


def _blob_dir(ref: WorkspaceRef, uri: str, target: str) -> str:
    where = datastores.resolve_uri(ref, uri, target)
    return str(Path("blobs", where.account, where.container, where.blob or "."))


def _model(repo: Repository, ref: WorkspaceRef, stored: dict) -> dict:
    """The deployment's model version as the step mounts it: its id, its files' datastore URI, its type."""
    model = stored["refs"]["model"]
    row = endpoints.find_asset(repo, ref, AssetRef(**model), "properties.model.assetId")
    if model.get("registry"):
        model_id = f"azureml://registries/{model['registry']}/models/{row.name}/versions/{row.version}"
    else:
        model_id = f"{ref.arm_id}/models/{row.name}/versions/{row.version}"
    return {"model_id": model_id, "model_uri": row.body["modelUri"],
            "model_type": row.body.get("modelType") or "custom_model"}


def step_body(record: dict, experiment: str, make: BodyMaker = parallel.command_body) -> dict:
    """The batchscoring step's command job PUT body, from a batch job's record."""
    return make(ParallelSettings(**record["settings"]), code_id=record["code_id"],
                environment_id=record["environment_id"], compute_id=record["compute_id"],
                input_name=record["input"]["name"], input_entry=record["input"]["entry"],
                output_uri=record["output"]["folder"], model_id=record["model_id"], model_uri=record["model_uri"],
                model_type=record["model_type"], environment_variables=record["environment_variables"],
                display_name=rules.STEP, experiment_name=experiment, output_name=rules.SCORE)


def _tried(repo: Repository, ref: WorkspaceRef, record: dict, experiment: str, now: datetime) -> None:
    """The step submitted as a dry run (rolled back): a step that could never run is refused now, said of the
    invocation's field where it is the invocation's."""
    name = record["input"]["name"]
    with repo.savepoint(keep=False):
        try:
            jobs.put(repo, ref, record["child"], step_body(record, experiment), now, None, {})
        except EmulatorError as exc:
            target = (exc.target or "").replace(f"properties.inputs.{name}", f"{rules.INPUTS}.{name}")
            raise type(exc)(f"The {rules.STEP} step could not run: {exc.message}", target=target or None) from exc


def _record(ref: WorkspaceRef, endpoint: BatchEndpoint, deployment: BatchDeployment, invocation: rules.Invocation,
            step_job: str, input_: tuple[str, dict], compute: Compute) -> dict:
    props = deployment.body["properties"]
    settings = deployment_rules.settings_of(deployment.body, invocation.overrides)
    if invocation.instance_count is not None:
        settings = replace(settings, instance_count=invocation.instance_count)
    output = rules.model_output(invocation)
    if output is not None and output.file_name:  # a uri_file output names the file
        settings = replace(settings, output_file_name=output.file_name)
    most = computes.spec_of(compute).scale.max_nodes
    if settings.instance_count > most:
        raise ValidationFailed(f"The job asks for {settings.instance_count} instances but cluster '{compute.name}' has "
                               f"at most {most} (maxNodeCount).", target="properties.compute.instanceCount")
    folder = rules.output_folder(output, step_job)
    datastores.resolve_uri(ref, folder, rules.OUTPUTS)
    code = props["codeConfiguration"]
    return {"kind": KIND, "endpoint": endpoint.name, "endpoint_key": endpoint.key, "deployment": deployment.name,
            "child": step_job, "settings": asdict(settings),
            "retry_timeout": {**props["retrySettings"], **invocation.overrides.get("retrySettings", {})}["timeout"],
            "input": {"name": input_[0], "entry": input_[1]},
            "output": {"folder": folder, "file_name": settings.output_file_name},
            "output_name": rules.SCORE, "code_id": code["codeId"] if code else None,
            "environment_id": props["environmentId"] or MLFLOW_ENVIRONMENT,
            "compute_id": f"{ref.arm_id}/computes/{compute.name}",
            "environment_variables": props["environmentVariables"], "outside": {}, "ended": []}


def invoke(repo: Repository, ref: WorkspaceRef, endpoint_name: str, header: str | None, body: object, now: datetime,
           guid: str, data_dir: Path | None = None, outside: dict[str, str | None] | None = None) -> Job:
    """The batch job, stored NotStarted; the controller's pass makes its step. `guid` names it."""
    endpoint = batch_endpoints.get_endpoint(repo, ref, endpoint_name)
    invocation = rules.parsed(body)
    deployment = _deployment(repo, ref, endpoint, header)
    name = rules.job_name(guid)
    if deployment.body["kind"] == deployment_rules.PIPELINE:
        return batch_pipeline_invoke.invoke(repo, ref, endpoint, deployment, invocation, name, now, data_dir,
                                            outside)
    compute = batch_endpoints.cluster(repo, ref, deployment.body["refs"]["compute"], "properties.compute")
    key = ref.child_id("jobs", name).lower()
    step_job = pipeline_steps.child_name(key, rules.STEP)
    record = _record(ref, endpoint, deployment, invocation, step_job,
                     _input(repo, ref, invocation, data_dir, outside or {}), compute)
    record.update(_model(repo, ref, deployment.body))
    body = rules.parent_body(name, endpoint.name, deployment.name, record["compute_id"], invocation, name)
    _tried(repo, ref, record, body["experimentName"], now)
    job = Job(key=key, workspace_key=ref.key, name=name, compute_key=compute.key, body=body,
              status=JobStatus.NOT_STARTED.value, created_at=now, modified_at=now, status_changed_at=now,
              history=[{"status": JobStatus.NOT_STARTED.value, "time": now.isoformat(), "attempt": 0}],
              driver=record)
    jobs.submitted(repo, job, now)
    jobs.experiment(repo, ref.key, body["experimentName"])
    return job


def listed(repo: Repository, ref: WorkspaceRef, endpoint_name: str, deployment: str | None = None) -> list[Job]:
    """The jobs invoking the endpoint made (those of one deployment), newest first."""
    endpoint = batch_endpoints.get_endpoint(repo, ref, endpoint_name)
    if deployment is not None:
        batch_endpoints.get_deployment(repo, ref, endpoint_name, deployment)
    return [job for job in repo.jobs(ref.key) if (job.driver or {}).get("endpoint_key") == endpoint.key
            and (deployment is None or job.driver["deployment"].lower() == deployment.lower())]
