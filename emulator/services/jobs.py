"""Jobs: submit (checked against the workspace's computes, code and environments), read, list, cancel,
and the one place a job's status changes (a parent job's, a sweep's, by domain/jobs/children.py's machine)."""

from collections.abc import Mapping
from datetime import datetime
from pathlib import Path

from emulator.domain import events as kinds
from emulator.domain.compute import local
from emulator.domain.ids import WorkspaceRef
from emulator.domain.jobs import artifacts, children, command_job, schedules, tracking
from emulator.domain.jobs.status import JobStatus, advance, is_terminal, on_cancel, reuse
from emulator.domain.registries import ids as registry_ids
from emulator.domain.storage import datastores
from emulator.errors import Conflict, NotFound, ValidationFailed
from emulator.services import (
    assets,
    attached,
    computes,
    data,
    environment_refs,
    events,
    job_outputs,
    kubernetes,
    local_runs,
    registry_assets,
    serverless,
    workspaces,
)
from emulator.store.repositories import Repository
from emulator.store.tables import Compute, Job, TrackedExperiment

P = command_job.P
# What a PUT on an existing job may change; everything else about a submitted job is fixed.
MUTABLE = ("tags", "description", "displayName", "isArchived", "properties")


def transition(job: Job, target: JobStatus, now: datetime, message: str | None = None, **extra) -> None:
    """Move a job to `target` (InvalidTransition if its machine forbids it) and record it in its history;
    `extra` goes into the history entry (a `warning` there is also shown as one of the run's warnings)."""
    machine = advance if job.driver is None else children.advance
    _record(job, machine(JobStatus(job.status), target), now, message, extra)


def reused(job: Job, now: datetime, message: str) -> None:
    """A pipeline step an earlier run stands in for: Completed before it starts (services/reuse.py)."""
    _record(job, reuse(JobStatus(job.status)), now, message, {})


def _record(job: Job, status: JobStatus, now: datetime, message: str | None, extra: dict) -> None:
    events.record_beside(job, job.workspace_key, kinds.JOB_STATUS, job.key, now, status=status.value,
                         previous=job.status, attempt=job.attempt, message=message, compute=job.compute_key)
    job.status, job.status_changed_at, job.modified_at = status.value, now, now
    if status == JobStatus.QUEUED:
        job.queued_at = job.queued_at or now
    if status == JobStatus.RUNNING and job.started_at is None:
        job.started_at = now
    if is_terminal(status):
        job.ended_at = now
    entry = {"status": status.value, "time": now.isoformat(), "attempt": job.attempt, **extra}
    job.history = [*job.history, {**entry, "message": message} if message else entry]


def _compute(repo: Repository, ref: WorkspaceRef, spec: command_job.JobSpec) -> Compute:
    name = command_job.arm_child_name(spec.compute_id, "computes")
    row = repo.compute(ref.child_id("computes", name))
    target = f"{P}.computeId"
    if row is None and local.is_local_name(name):  # what a sweep's or a pipeline step's compute="local" sends
        raise ValidationFailed(local.REFUSED.format(what="sweeps and pipeline steps"), target=target)
    if row is None or row.provisioning_state == "Deleting":
        raise ValidationFailed(f"Compute '{name}' was not found in workspace '{ref.name}'. Create it first, or list "
                               "the computes with ml_client.compute.list().", target=target)
    if row.compute_type == "Kubernetes":  # its instance type's checks: services/kubernetes.py
        return row
    if row.compute_type == attached.COMPUTE_TYPE:  # the job targets the attached machine itself: one node
        if spec.instance_count > 1:
            raise ValidationFailed(f"'{name}' is an attached virtual machine, a single machine: a job there runs on "
                                   f"one node, not {spec.instance_count}.", target=f"{P}.resources.instanceCount")
        return row
    if row.compute_type not in ("AmlCompute", "ComputeInstance"):
        raise ValidationFailed(f"Compute '{name}' is a {row.compute_type}; amlemu runs jobs on compute clusters "
                               "(AmlCompute), compute instances, attached virtual machines and Kubernetes "
                               "compute.", target=target)
    if row.compute_type == "ComputeInstance" and spec.instance_count > 1:
        raise ValidationFailed(f"'{name}' is a compute instance, a single machine: a job there runs on one node, "
                               f"not {spec.instance_count}. Use a compute cluster for multi-node jobs.",
                               target=f"{P}.resources.instanceCount")
    max_nodes = computes.spec_of(row).scale.max_nodes
    if spec.instance_count > max_nodes:
        raise ValidationFailed(f"The job asks for {spec.instance_count} nodes but cluster '{name}' has at most "
                               f"{max_nodes} (maxNodeCount).", target=f"{P}.resources.instanceCount")
    return row


def _asset(repo: Repository, ref: WorkspaceRef, arm_id: str, kind: str, target: str) -> None:
    if registry_ids.is_asset_id(arm_id):  # a registry's component runs its registry's code in any workspace
        registry_assets.find(repo, registry_ids.asset_ref(arm_id, kind, target), target)
        return
    name, version = command_job.version_ref(arm_id, kind, target)
    try:
        assets.get(repo, ref, kind, name, version)
    except NotFound as exc:
        raise ValidationFailed(exc.message, target=target) from exc


def _check_uris(repo: Repository, ref: WorkspaceRef, spec: command_job.JobSpec, props: dict,
                data_dir: Path | None, outside: Mapping[str, str | None] | None) -> None:
    """Inputs and outputs must point into the workspace's datastores, where jobs can mount them; an input
    naming a data asset reads the asset's files, recorded now."""
    resolved = data.input_uris(repo, ref, spec.inputs, data_dir, outside)
    if resolved:
        props[command_job.RESOLVED_INPUTS] = resolved
    for name, entry in spec.outputs.items():
        if entry.get("uri"):
            datastores.resolve_uri(ref, entry["uri"], f"{P}.outputs.{name}.uri")


def put(repo: Repository, ref: WorkspaceRef, name: str, body: object, now: datetime,
        data_dir: Path | None = None, outside: Mapping[str, str | None] | None = None,
        client: bool = False) -> tuple[Job, bool]:
    """`data_dir`: where the api finds the workspace's files, to refuse an input that is not there; None
    leaves that to the job. `outside`: the copies of inputs outside the workspace (services/external_data),
    made before the transaction; without them such inputs are refused. `client`: a job its client submits (not a
    sweep's trial, a pipeline's step, a schedule's run), which alone may run on local compute: its client starts it."""
    command_job.name(name)
    workspace = workspaces.get(repo, ref)
    props, spec = command_job.parse(body)
    existing = repo.job(ref.child_id("jobs", name))
    if existing is not None:
        return update(existing, props, now), False
    if spec.compute_id:
        compute = _compute(repo, ref, spec)
        props["computeId"] = f"{ref.arm_id}/computes/{compute.name}"
        if compute.compute_type in computes.ATTACHABLE_TYPES:
            compute = kubernetes.job_target(repo, ref, workspace, compute, props, spec.instance_count, data_dir, now)
    elif spec.local:  # it waits for its client to start it (start_local)
        if not client:
            raise ValidationFailed(local.REFUSED.format(what="sweeps, pipeline steps and schedules"),
                                   target=f"{P}.resources.properties.{local.FLAG}")
        compute = local_runs.capacity_for(repo, ref, workspace, now)
        props[local.AWAITING] = True
    else:  # serverless: the job keeps naming no compute, as Azure shows it
        compute = serverless.cluster_for(repo, ref, workspace, spec.capacity, spec.instance_count,
                                         now, P)
    job_outputs.check(repo, ref, spec.outputs)
    _check_uris(repo, ref, spec, props, data_dir, outside)
    if spec.code_id:
        _asset(repo, ref, spec.code_id, assets.CODES, f"{P}.codeId")
    environment = environment_refs.in_workspace(repo, ref, spec.environment_id, f"{P}.environmentId", now)
    if environment.curated_id:
        props["environmentId"] = environment.curated_id
    elif environment.registry:
        props[command_job.RESOLVED_ENVIRONMENT] = environment.row.key
    job = Job(key=ref.child_id("jobs", name).lower(), workspace_key=ref.key, name=name, compute_key=compute.key,
              body=props, status=JobStatus.NOT_STARTED.value, created_at=now, modified_at=now,
              status_changed_at=now, history=[{"status": JobStatus.NOT_STARTED.value, "time": now.isoformat(),
                                               "attempt": 0}])
    submitted(repo, job, now)
    experiment(repo, ref.key, props.get("experimentName") or command_job.DEFAULT_EXPERIMENT)
    return job, True


def submitted(repo: Repository, job: Job, now: datetime) -> None:
    """A new job is stored, NotStarted: its first event on the timeline."""
    repo.add(job)
    events.record(repo, job.workspace_key, kinds.JOB_STATUS, job.key, now, status=job.status, attempt=0,
                  compute=job.compute_key)


def experiment(repo: Repository, workspace_key: str, name: str) -> None:
    """The job's experiment is the workspace's from its first job on (its id is known before MLflow makes it)."""
    guid = tracking.experiment_guid(workspace_key, name)
    if repo.tracked_experiment(workspace_key, guid) is None:
        repo.add(TrackedExperiment(key=TrackedExperiment.key_of(workspace_key, guid), workspace_key=workspace_key,
                                   name=name, mlflow_id=None))


def update(job: Job, props: dict, now: datetime) -> Job:
    """A PUT on an existing job (the SDK sends back what it read, read-only `services` too: a local run's)."""
    fixed = {k: v for k, v in props.items() if k not in MUTABLE and k not in ("computeId", "services")}
    stored = {k: v for k, v in job.body.items() if k not in MUTABLE and k != "computeId" and k in fixed}
    changed = sorted(k for k in fixed if fixed[k] != stored.get(k))
    if changed:
        raise Conflict(f"Job '{job.name}' already exists; only {', '.join(MUTABLE)} can change, not "
                       f"{', '.join(changed)}. Submit a new job (a new name) instead.", target=f"{P}.{changed[0]}")
    job.body = {**job.body, **{k: props[k] for k in MUTABLE if k in props}}
    job.modified_at = now
    return job


def start_local(repo: Repository, ref: WorkspaceRef, body: object, now: datetime) -> bytes:
    """The client's call to the Execution Service: its local job may start (once: a repeated call starts nothing
    more). The answer is the zip the SDK unzips and invokes."""
    job = get(repo, ref, local.run_of(body))
    if not local.is_local_compute(job.compute_key.rsplit("/", 1)[-1]):
        raise ValidationFailed(f"Job '{job.name}' does not run on local compute: it started when it was submitted.",
                               target="RunId")
    if job.body.get(local.AWAITING):
        if job.status != JobStatus.NOT_STARTED.value:  # cancelled before its client started it
            raise Conflict(f"Job '{job.name}' is {job.status}: it can no longer start.", target="RunId")
        job.body = {k: v for k, v in job.body.items() if k != local.AWAITING}
        transition(job, JobStatus.STARTING, now, "started by its client (local compute)")
    return local.invocation_zip(job.name)


def get(repo: Repository, ref: WorkspaceRef, name: str) -> Job:
    job = repo.job(ref.child_id("jobs", name))
    if job is None:
        raise NotFound(f"Job '{name}' was not found in workspace '{ref.name}'.", target="name")
    return job


def listed(repo: Repository, ref: WorkspaceRef, view: str, schedule: str | None = None,
           scheduled: bool | None = None) -> list[Job]:
    """`schedule`: only the jobs that schedule made; `scheduled`: only those a schedule made (True) or not. A parent's
    children are not listed, as in Azure: `jobs.list(parent_job_name=...)` reads them from RunHistory."""
    workspaces.get(repo, ref)
    archived = {"ActiveOnly": (False,), "ArchivedOnly": (True,), "All": (False, True)}[view]
    return [j for j in repo.jobs(ref.key) if bool(j.body.get("isArchived")) in archived and j.parent_key is None
            and schedules.made_by(j.body, schedule, scheduled)]


def cancel(repo: Repository, ref: WorkspaceRef, name: str, now: datetime, message: str | None = None) -> Job:
    """Nothing runs yet: Canceled at once. Something runs: CancelRequested; the controller stops it. A parent's
    children are cancelled with it, and it is Canceled once none runs (controller/reconcilers/parents.py)."""
    job = get(repo, ref, name)
    target = on_cancel(JobStatus(job.status))
    if job.driver is not None and target.value != job.status and target == JobStatus.CANCELED and \
            repo.children(job.key):
        target = JobStatus.CANCEL_REQUESTED
    if target.value != job.status:
        transition(job, target, now, message)
    if job.driver is not None:
        for child in repo.children(job.key):
            cancel(repo, ref, child.name, now, message)
    return job


def output_location(repo: Repository, ref: WorkspaceRef, asset_id: str) -> dict | None:
    """{uri, type} of the job output an asset id from RunHistory names, or None."""
    for job_name, output in artifacts.output_of(asset_id):
        job = repo.job(ref.child_id("jobs", job_name))
        entry = job.body.get("outputs", {}).get(output) if job else None
        if entry is not None:
            kind = "uri_file" if entry["jobOutputType"] == "uri_file" else "uri_folder"
            return {"uri": artifacts.output_uri(job.name, output, entry), "type": kind}
    return None
