"""The compute-instance state machine, its last operation, idle shutdown and job slots: pure, fixed times."""

from datetime import UTC, datetime, timedelta

import pytest

from emulator.domain.compute import instance
from emulator.domain.compute.instance import Activity, LastOperation, Trigger
from emulator.domain.compute.instance import InstanceState as S
from emulator.errors import InvalidTransition, ValidationFailed

NOW = datetime(2026, 11, 23, 9, 0, tzinfo=UTC)


def test_create_runs_then_each_operation_passes_through_its_state():
    state, op = instance.create(NOW)
    assert (state, op.name, op.status, op.trigger) == (S.CREATING, "Create", "InProgress", Trigger.USER)
    assert instance.finish(op, True, NOW)[0] == S.RUNNING
    for action, start, during, done in (("Stop", S.RUNNING, S.STOPPING, S.STOPPED),
                                        ("Stop", S.JOB_RUNNING, S.STOPPING, S.STOPPED),
                                        ("Start", S.STOPPED, S.STARTING, S.RUNNING),
                                        ("Restart", S.RUNNING, S.RESTARTING, S.RUNNING)):
        state, op = instance.begin(action, start, Trigger.USER, NOW)
        assert state == during and op.status == "InProgress"
        state, op = instance.finish(op, True, NOW + timedelta(seconds=5))
        assert state == done and (op.name, op.status) == (action, "Succeeded")


@pytest.mark.parametrize(("action", "state", "words"), [
    ("Start", S.RUNNING, "already running"), ("Stop", S.STOPPED, "cannot be stopped"),
    ("Restart", S.STOPPED, "start it instead"), ("Start", S.STOPPING, "wait for the current operation"),
    ("Stop", S.CREATING, "wait for the current operation"), ("Delete", S.DELETING, "wait"),
])
def test_a_users_illegal_request_is_refused_naming_the_state(action, state, words):
    with pytest.raises(InvalidTransition) as refused:
        instance.begin(action, state, Trigger.USER, NOW, name="my-ci")
    assert "'my-ci'" in refused.value.message and state.value in refused.value.message
    assert words in refused.value.message


def test_a_schedule_or_idle_shutdown_with_nothing_to_do_is_dropped():
    assert instance.begin("Stop", S.STOPPED, Trigger.SCHEDULE, NOW) is None
    assert instance.begin("Start", S.RUNNING, Trigger.SCHEDULE, NOW) is None
    assert instance.begin("Stop", S.STARTING, Trigger.IDLE_SHUTDOWN, NOW) is None
    assert instance.begin("Stop", S.RUNNING, Trigger.IDLE_SHUTDOWN, NOW)[1].trigger == Trigger.IDLE_SHUTDOWN


def test_failures_name_the_operation():
    _, op = instance.create(NOW)
    assert instance.finish(op, False, NOW) == (S.CREATE_FAILED, LastOperation("Create", NOW, "CreateFailed",
                                                                               Trigger.USER))
    _, op = instance.begin("Start", S.STOPPED, Trigger.SCHEDULE, NOW)
    state, failed = instance.finish(op, False, NOW)
    assert (state, failed.status, failed.trigger) == (S.UNUSABLE, "StartFailed", Trigger.SCHEDULE)


def test_last_operation_round_trips_and_has_azures_shape():
    op = LastOperation("Stop", NOW, "Succeeded", Trigger.IDLE_SHUTDOWN)
    assert LastOperation.from_row(op.to_row()) == op
    assert op.to_arm() == {"operationName": "Stop", "operationTime": "2026-11-23T09:00:00Z",
                           "operationStatus": "Succeeded", "operationTrigger": "IdleShutdown"}


def test_jobs_move_running_and_job_running_only():
    assert instance.with_jobs(S.RUNNING, 1) == S.JOB_RUNNING
    assert instance.with_jobs(S.JOB_RUNNING, 0) == S.RUNNING
    assert instance.with_jobs(S.STOPPING, 2) == S.STOPPING


def test_slots_admit_first_come_first_served_while_up():
    assert instance.admit(queued=3, running=0, slots=1, state=S.RUNNING) == 1
    assert instance.admit(queued=3, running=1, slots=2, state=S.JOB_RUNNING) == 1
    assert instance.admit(queued=3, running=2, slots=2, state=S.JOB_RUNNING) == 0
    assert instance.admit(queued=3, running=0, slots=4, state=S.STOPPED) == 0


@pytest.mark.parametrize(("value", "seconds"), [(None, None), ("PT15M", 900.0), ("PT2H", 7200.0), ("P3D", 259200.0)])
def test_idle_time_in_azures_range(value, seconds):
    assert instance.parse_idle_time(value) == seconds


@pytest.mark.parametrize("value", ["PT14M", "P3DT1M", "soon", 30])
def test_idle_time_out_of_range_names_the_field(value):
    with pytest.raises(ValidationFailed) as refused:
        instance.parse_idle_time(value)
    assert refused.value.target == "properties.properties.idleTimeBeforeShutdown"


def test_low_priority_is_refused():
    with pytest.raises(ValidationFailed, match="cannot be low priority"):
        instance.validate_priority({"vmPriority": "LowPriority"})
    instance.validate_priority({"vmPriority": "Dedicated"})


def test_the_idle_clock_runs_only_without_kernels_terminals_ssh_or_jobs():
    for busy in (Activity(kernels=1), Activity(terminals=1), Activity(ssh_sessions=1), Activity(jobs=1)):
        assert instance.idle_since(NOW - timedelta(hours=1), busy, NOW) is None
    quiet = Activity(last_activity=NOW - timedelta(minutes=5))
    assert instance.idle_since(None, quiet, NOW) == NOW - timedelta(minutes=5)  # idle since its last use
    assert instance.idle_since(NOW - timedelta(hours=1), quiet, NOW) == NOW - timedelta(hours=1)
    assert instance.idle_since(None, Activity(), NOW) == NOW
    since = NOW - timedelta(minutes=20)
    assert instance.due_for_idle_shutdown(since, 15 * 60, NOW)
    assert not instance.due_for_idle_shutdown(since, 30 * 60, NOW)
    assert not instance.due_for_idle_shutdown(None, 15 * 60, NOW)


def test_a_setting_shorter_than_the_time_already_idle_restarts_the_clock():
    since = NOW - timedelta(minutes=40)
    assert instance.reset_on_change(3600, 1800, since, NOW) == NOW  # 30 min < 40 min idle: from now
    assert instance.reset_on_change(1800, 3600, since, NOW) == since
    assert instance.reset_on_change(None, 1800, None, NOW) is None
