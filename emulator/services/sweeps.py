"""Submitting a sweep job. Its first trial is submitted as a dry run (services.jobs, rolled back) with a value of
every distribution, so that a sweep whose trials could never run (no such compute, environment or code; inputs
its command does not declare) is refused now, naming the sweep's own field, and nothing is created.

The sweep is then a parent job (domain/jobs/children.py) whose driver record (services/sweep_driver.py) starts
with its seed: the one given, or one drawn now and kept, so a restarted controller samples as before.
"""

import secrets
import uuid
from collections.abc import Mapping
from datetime import datetime
from pathlib import Path

from emulator.domain.ids import WorkspaceRef
from emulator.domain.jobs import command_job, sweep
from emulator.domain.jobs.status import JobStatus
from emulator.errors import EmulatorError, ValidationFailed
from emulator.services import jobs, workspaces
from emulator.store.repositories import Repository
from emulator.store.tables import Job

P = sweep.P
KIND = "sweep"
# A trial's own fields, said of the sweep's `trial`; the rest (compute, inputs, outputs) are the sweep's own.
_TRIAL_FIELDS = ("command", "codeId", "environmentId", "environmentVariables", "resources", "distribution")


def is_sweep(body: object) -> bool:
    props = body.get(P) if isinstance(body, dict) else None
    return isinstance(props, dict) and props.get("jobType") == "Sweep"


def _as_sweep_error(exc: EmulatorError) -> EmulatorError:
    """A trial's refusal, said of the sweep's field that caused it."""
    target = exc.target or ""
    field = target[len(P) + 1:].split(".", 1)[0] if target.startswith(P + ".") else ""
    if field in _TRIAL_FIELDS:
        where = f"{P}.trial.{target[len(P) + 1:]}"
    elif field == "limits":
        where = f"{P}.limits.trialTimeout"
    else:
        where = target or None
    return type(exc)(f"The sweep's trials could not run: {exc.message}", target=where)


def _tried(repo: Repository, ref: WorkspaceRef, name: str, props: dict, spec: sweep.SweepSpec, now: datetime,
           data_dir: Path | None, outside: Mapping[str, str | None] | None) -> str:
    """The first trial, submitted and rolled back: the compute its trials run on."""
    params = {key: dim.example() for key, dim in spec.space.items()}
    probe = f"{name[:200]}-{uuid.uuid4().hex[:12]}"
    try:
        with repo.savepoint(keep=False):
            trial, _ = jobs.put(repo, ref, probe, sweep.trial_body(props, spec, probe, params), now, data_dir, outside)
            compute_key = trial.compute_key
    except EmulatorError as exc:
        raise _as_sweep_error(exc) from exc
    return compute_key


def put(repo: Repository, ref: WorkspaceRef, name: str, body: object, now: datetime,
        data_dir: Path | None = None, outside: Mapping[str, str | None] | None = None) -> tuple[Job, bool]:
    command_job.name(name)
    workspaces.get(repo, ref)
    props, spec = sweep.parse(body)
    existing = repo.job(ref.child_id("jobs", name))
    if existing is not None:
        if existing.driver is None:
            raise ValidationFailed(f"Job '{name}' exists and is not a sweep job.", target=f"{P}.jobType")
        return jobs.update(existing, props, now), False
    compute_key = _tried(repo, ref, name, props, spec, now, data_dir, outside)
    props["experimentName"] = props.get("experimentName") or command_job.DEFAULT_EXPERIMENT
    props["properties"] = dict(props.get("properties") or {})
    seed = spec.sampling.seed if spec.sampling.seed is not None else secrets.randbelow(2 ** 31)
    job = Job(key=ref.child_id("jobs", name).lower(), workspace_key=ref.key, name=name, compute_key=compute_key,
              body=props, status=JobStatus.NOT_STARTED.value, created_at=now, modified_at=now, status_changed_at=now,
              history=[{"status": JobStatus.NOT_STARTED.value, "time": now.isoformat(), "attempt": 0}],
              driver={"kind": KIND, "seed": seed, "trials": [], "outside": dict(outside or {})})
    jobs.submitted(repo, job, now)
    jobs.experiment(repo, ref.key, props["experimentName"])
    return job, True
