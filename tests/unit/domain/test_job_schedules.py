"""Job schedules' bodies: a command job's definition or a job named by `sourceJobId`, anything else refused naming
the field; the names and marks of the jobs a schedule makes; the list views."""

from datetime import UTC, datetime

import pytest
from azure.ai.ml.entities import CronTrigger, JobSchedule

from emulator.domain.jobs import schedules
from emulator.errors import ValidationFailed

CRON = {"triggerType": "Cron", "expression": "* * * * *"}
COMMAND = {"jobType": "Command", "command": "echo hi", "environmentId": "env"}


def body(action: dict | None = None, **props) -> dict:
    return {"properties": {"trigger": CRON, "action": action or {"actionType": "CreateJob", "jobDefinition": COMMAND},
                           **props}}


@pytest.mark.parametrize(("source", "name"), [
    ("my-job", "my-job"), ("azureml:my-job", "my-job"),
    ("azureml:/subscriptions/s/resourceGroups/r/providers/Microsoft.MachineLearningServices/workspaces/w/jobs/my-job",
     "my-job")])
def test_a_job_named_by_the_sdk_is_the_source_each_firing_copies(source, name):
    raw = JobSchedule(name="s", trigger=CronTrigger(expression="0 * * * *"), create_job=source)._to_rest_object()
    spec = schedules.parse(raw.as_dict())
    assert (spec.source_job, spec.job, spec.enabled) == (name, None, True)
    assert spec.props["action"]["jobDefinition"]["sourceJobId"] == source  # read back as given


def test_a_command_definition_is_the_body_of_each_job():
    spec = schedules.parse(body(isEnabled=False, displayName="nightly", tags={"a": "b"}))
    assert spec.job == {"properties": COMMAND} and spec.source_job is None and not spec.enabled
    assert spec.props["displayName"] == "nightly" and spec.props["tags"] == {"a": "b"}


@pytest.mark.parametrize(("raw", "target"), [
    (body({"actionType": "CreateMonitor", "monitorDefinition": {}}), "properties.action.actionType"),
    (body({"actionType": "CreateJob"}), "properties.action.jobDefinition"),
    (body({"actionType": "CreateJob", "jobDefinition": {"jobType": "Sweep"}}),
     "properties.action.jobDefinition.jobType"),
    (body({"actionType": "CreateJob", "jobDefinition": {"jobType": "Pipeline", "jobs": {"a": {}}}}),
     "properties.action.jobDefinition.jobType"),
    (body(isEnabled="yes"), "properties.isEnabled"),
    (body(trigger={"triggerType": "Cron", "expression": "bad"}), "properties.trigger.expression"),
    ({"properties": {"action": {}}}, "properties.trigger"),
])
def test_bad_bodies_are_refused_naming_the_field(raw, target):
    with pytest.raises(ValidationFailed) as caught:
        schedules.parse(raw)
    assert caught.value.target == target


def test_each_occurrence_has_its_own_job_name_and_marks():
    moment = datetime(2026, 1, 5, 10, 1, tzinfo=UTC)
    assert schedules.job_name("nightly", moment) == "nightly-202601051001"
    made = schedules.job_body({**COMMAND, "properties": {"mine": "1"}}, "nightly", moment)["properties"]
    assert made["properties"] == {"mine": "1", schedules.SCHEDULE_NAME: "nightly",
                                  schedules.TRIGGER_TIME: moment.isoformat()}
    assert schedules.made_by(made, "NIGHTLY", None) and schedules.made_by(made, None, True)
    assert not schedules.made_by(made, "other", None) and not schedules.made_by(COMMAND, None, True)
    assert schedules.made_by(COMMAND, None, False)


def test_list_views():
    assert schedules.list_view(None) == "EnabledOnly" and schedules.list_view("all") == "All"
    assert schedules.shown(False, "DisabledOnly") and not schedules.shown(False, "EnabledOnly")
    with pytest.raises(ValidationFailed):
        schedules.list_view("Archived")
