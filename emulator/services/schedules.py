"""Job schedules: write (the job each firing submits is tried now, as a submission rolled back, so a schedule
that could never make its job is refused), read, list, delete; and the controller's firing: each occurrence due
is a job submitted through services.jobs in the transaction that records how far the schedule has fired.

Deleting a schedule leaves the jobs it made. A disabled schedule fires nothing, and enabling it again fires
nothing it missed meanwhile: its calendar picks up at that moment.
"""

import logging
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from emulator.domain import calendar
from emulator.domain.ids import WorkspaceRef
from emulator.domain.jobs import command_job, schedules, triggers
from emulator.domain.storage import external
from emulator.errors import EmulatorError, NotFound, ValidationFailed
from emulator.services import jobs, workspaces
from emulator.store.repositories import Repository
from emulator.store.tables import Job, Schedule

log = logging.getLogger("amlemu.schedules")
LIMIT = 10  # occurrences one look fires at most, the latest: a controller down for a day does not flood


@dataclass(frozen=True)
class Fired:
    schedule: str
    occurrence: datetime
    job: str | None  # the job it created; None when it could not (`error` says why)
    error: str | None = None


def _source_outside(job: Job) -> dict[str, str | None]:
    """The copies the source job's inputs outside the workspace were given (None: a Direct one)."""
    resolved = job.body.get(command_job.RESOLVED_INPUTS, {})
    return {name: resolved.get(name) for name, entry in job.body.get("inputs", {}).items()
            if entry["jobInputType"] != "literal" and external.is_external(entry.get("uri"))}


def _definition(repo: Repository, ref: WorkspaceRef, spec: schedules.ScheduleSpec,
                outside: Mapping[str, str | None]) -> tuple[dict, Mapping[str, str | None]]:
    """The job's PUT body and its inputs' outside copies: the definition given, or a copy of the job named."""
    if spec.source_job is None:
        return spec.job, outside
    try:
        source = jobs.get(repo, ref, spec.source_job)
    except NotFound as exc:
        raise ValidationFailed(f"{schedules.DEFINITION}.sourceJobId: {exc.message} A schedule's create_job names "
                               "an existing job, or is a job definition.",
                               target=f"{schedules.DEFINITION}.sourceJobId") from exc
    return {command_job.P: source.body}, _source_outside(source)


def _as_definition_error(exc: EmulatorError) -> ValidationFailed:
    """A job submission's error, said of the schedule's job definition."""
    target = exc.target or ""
    where = (schedules.DEFINITION + target[len(command_job.P):] if target.startswith(command_job.P)
             else schedules.DEFINITION)
    return ValidationFailed(f"{schedules.DEFINITION}: {exc.message}", target=where)


def _try_job(repo: Repository, ref: WorkspaceRef, name: str, spec: schedules.ScheduleSpec, now: datetime,
             data_dir: Path | None, outside: Mapping[str, str | None]) -> None:
    body, copies = _definition(repo, ref, spec, outside)
    probe = f"{name[:200]}-{uuid.uuid4().hex[:12]}"
    try:
        with repo.savepoint(keep=False):
            jobs.put(repo, ref, probe, schedules.job_body(body[command_job.P], name, now), now, data_dir, copies)
    except EmulatorError as exc:
        raise _as_definition_error(exc) from exc


def put(repo: Repository, ref: WorkspaceRef, name: str, body: object, now: datetime, time_scale: float,
        data_dir: Path | None = None, outside: Mapping[str, str | None] | None = None) -> tuple[Schedule, bool]:
    """`outside`: copies of the definition's inputs outside the workspace, made before the transaction."""
    schedules.name(name)
    workspaces.get(repo, ref)
    spec = schedules.parse(body)
    _try_job(repo, ref, name, spec, now, data_dir, outside or {})
    row = repo.schedule(ref.child_id("schedules", name))
    if row is None:
        row = Schedule(key=ref.child_id("schedules", name).lower(), workspace_key=ref.key, name=name,
                       body=spec.props, enabled=spec.enabled, created_at=now, modified_at=now,
                       outside=dict(outside or {}), fired_through=now)
        repo.add(row)
        return row, True
    if spec.enabled and (not row.enabled or spec.props["trigger"] != row.body["trigger"]):
        # what fell due while it was off, or under its old trigger, is not owed
        row.fired_through = max(row.fired_through, calendar.emulated(now, row.created_at, time_scale))
    row.body, row.enabled, row.outside, row.modified_at = spec.props, spec.enabled, dict(outside or {}), now
    return row, False


def get(repo: Repository, ref: WorkspaceRef, name: str) -> Schedule:
    workspaces.get(repo, ref)
    row = repo.schedule(ref.child_id("schedules", name))
    if row is None:
        raise NotFound(f"Schedule '{name}' was not found in workspace '{ref.name}'.", target="name")
    return row


def listed(repo: Repository, ref: WorkspaceRef, view: str | None) -> list[Schedule]:
    workspaces.get(repo, ref)
    wanted = schedules.list_view(view)
    return [row for row in repo.schedules(ref.key) if schedules.shown(row.enabled, wanted)]


def delete(repo: Repository, ref: WorkspaceRef, name: str) -> bool:
    """False when there was no such schedule. The jobs it made stay."""
    workspaces.get(repo, ref)
    row = repo.schedule(ref.child_id("schedules", name))
    if row is not None:
        repo.remove(row)
    return row is not None


def _fire(repo: Repository, ref: WorkspaceRef, row: Schedule, spec: schedules.ScheduleSpec, occurrence: datetime,
          now: datetime, data_dir: Path | None) -> Fired:
    name = schedules.job_name(row.name, occurrence)
    row.last_fired = occurrence
    if repo.job(ref.child_id("jobs", name)) is not None:  # made already: an occurrence fires once
        return Fired(row.name, occurrence, name)
    try:
        with repo.savepoint():
            body, copies = _definition(repo, ref, spec, row.outside)
            jobs.put(repo, ref, name, schedules.job_body(body[command_job.P], row.name, occurrence), now, data_dir,
                     copies)
    except EmulatorError as exc:  # the compute or an asset went since: this occurrence makes no job
        row.last_error = {"code": exc.code, "message": exc.message, "occurrence": occurrence.isoformat()}
        return Fired(row.name, occurrence, None, exc.message)
    row.last_job, row.last_error = name, None
    return Fired(row.name, occurrence, name)


def fire_due(repo: Repository, now: datetime, time_scale: float, data_dir: Path | None) -> list[Fired]:
    """The controller's look at every enabled schedule: the jobs of the occurrences due, and each schedule's
    calendar moved on, in the caller's one transaction."""
    fired = []
    for row in repo.enabled_schedules():
        workspace = repo.workspace(row.workspace_key)
        if workspace is None:
            continue
        spec = schedules.parse({command_job.P: row.body})  # checked when stored
        on_calendar = calendar.emulated(now, row.created_at, time_scale)
        for occurrence in triggers.due(spec.trigger, row.created_at, row.fired_through, on_calendar, LIMIT):
            fired.append(_fire(repo, WorkspaceRef.of(workspace), row, spec, occurrence, now, data_dir))
        row.fired_through = max(row.fired_through, on_calendar)
    return fired
