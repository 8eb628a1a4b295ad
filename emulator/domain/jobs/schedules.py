"""Job schedules (`workspaces/{ws}/schedules/{name}`, action `CreateJob`): the PUT body checked and normalised,
and the names of the jobs a schedule creates. Pure: whether the job it names exists is the service's question.

A schedule's action holds either a command job's definition (the SDK sends one for `create_job=command(...)`)
or, for `create_job="<job name or id>"`, a definition of jobType Pipeline that only names that job
(`sourceJobId`): each firing then submits a copy of that job.
"""

import copy
from dataclasses import dataclass
from datetime import datetime

from emulator.domain import payload
from emulator.domain.jobs import command_job, triggers
from emulator.errors import ValidationFailed

P = "properties"
ACTION = f"{P}.action"
DEFINITION = f"{ACTION}.jobDefinition"
VIEWS = {"enabledonly": "EnabledOnly", "disabledonly": "DisabledOnly", "all": "All"}
# Kept in a job's `properties`, so that jobs.list(scheduled_job_name=...) finds the jobs a schedule made.
SCHEDULE_NAME = "azureml.scheduleName"
TRIGGER_TIME = "azureml.scheduleTriggerTime"


@dataclass(frozen=True)
class ScheduleSpec:
    enabled: bool
    trigger: triggers.Trigger
    job: dict | None  # a command job's PUT body, for a new job at each firing
    source_job: str | None  # or the name of the job each firing copies
    props: dict  # the stored `properties`, as the SDK reads them back


def name(value: str) -> str:
    """Azure's rule for schedule names is the jobs' one: letters, digits, '-' and '_'."""
    try:
        return command_job.name(value)
    except ValidationFailed as exc:
        raise ValidationFailed(exc.message.replace("job name", "schedule name"), target="name") from exc


def _source_job(definition: dict) -> str:
    """The job a Pipeline definition names by `sourceJobId`: a name, `azureml:<name>` or an ARM id."""
    source = payload.required_string(definition.get("sourceJobId"), f"{DEFINITION}.sourceJobId")
    bare = source[len("azureml:"):] if source.lower().startswith("azureml:") else source
    return command_job.arm_child_name(bare, "jobs")


def _action(raw: object) -> tuple[dict, dict | None, str | None]:
    action = payload.obj(raw, ACTION, required=True)
    kind = action.get("actionType")
    if kind != "CreateJob":
        raise ValidationFailed(f"{ACTION}.actionType must be CreateJob: amlemu schedules create jobs (not monitors, "
                               f"data imports or batch endpoint runs); got {kind!r}.", target=f"{ACTION}.actionType")
    definition = dict(payload.obj(action.get("jobDefinition"), DEFINITION, required=True))
    job_type = definition.get("jobType")
    if job_type == "Command":
        return {"actionType": kind, "jobDefinition": definition}, {P: definition}, None
    if job_type == "Pipeline" and definition.get("sourceJobId") and not definition.get("jobs"):
        return {"actionType": kind, "jobDefinition": definition}, None, _source_job(definition)
    raise ValidationFailed(f"{DEFINITION}.jobType: amlemu schedules command jobs, given as a definition or as the "
                           f"name of an existing job (create_job='<job name>'); got {job_type!r}.",
                           target=f"{DEFINITION}.jobType")


def parse(body: object) -> ScheduleSpec:
    body = payload.obj(body, "body", required=True)
    payload.finite(body)
    props = payload.obj(body.get(P), P, required=True)
    enabled = props.get("isEnabled", True)
    if not isinstance(enabled, bool):
        raise ValidationFailed(f"{P}.isEnabled must be true or false; got {enabled!r}.", target=f"{P}.isEnabled")
    for key in ("displayName", "description"):
        payload.string(props.get(key), f"{P}.{key}")
    trigger = triggers.parse(props.get("trigger"), f"{P}.trigger")
    action, job, source = _action(props.get("action"))
    stored = {"displayName": props.get("displayName"), "description": props.get("description"),
              "tags": payload.string_map(props.get("tags"), f"{P}.tags"),
              "properties": payload.string_map(props.get("properties"), f"{P}.properties"),
              "isEnabled": enabled, "trigger": trigger.arm, "action": action}
    return ScheduleSpec(enabled, trigger, job, source, stored)


def list_view(value: str | None) -> str:
    view = value or "EnabledOnly"
    if view.lower() not in VIEWS:
        raise ValidationFailed(f"listViewType must be one of {', '.join(VIEWS.values())}; got {value!r}.",
                               target="listViewType")
    return VIEWS[view.lower()]


def shown(enabled: bool, view: str) -> bool:
    return view == "All" or enabled == (view == "EnabledOnly")


def job_name(schedule: str, occurrence: datetime) -> str:
    """One name per occurrence: a firing that was committed can never be made again under another name."""
    return f"{schedule[:200]}-{occurrence:%Y%m%d%H%M}"


def job_body(definition: dict, schedule: str, occurrence: datetime) -> dict:
    """The PUT body of the job an occurrence creates: a copy of the definition (a submission normalises what it is
    given), marked with the schedule and the time."""
    marks = {SCHEDULE_NAME: schedule, TRIGGER_TIME: occurrence.isoformat()}
    definition = copy.deepcopy(definition)
    return {P: {**definition, "properties": {**(definition.get("properties") or {}), **marks}}}


def made_by(job_props: dict, schedule: str | None, scheduled: bool | None) -> bool:
    """Whether a job passes jobs.list's `scheduleId` and `scheduled` filters."""
    by = (job_props.get("properties") or {}).get(SCHEDULE_NAME)
    if schedule is not None and (by or "").lower() != schedule.lower():
        return False
    return scheduled is None or scheduled == (by is not None)
