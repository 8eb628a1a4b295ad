"""The controller's schedules step on a store of its own, its clock moved by the test: each occurrence makes one
job (a controller restarted or killed mid-pass never makes it twice), the time scale runs the calendar faster, a
disabled schedule makes nothing and owes nothing once enabled again, and deleting one leaves its jobs."""

import pytest

from emulator.controller.reconcilers.schedules import ScheduleReconciler
from emulator.domain.jobs.schedules import SCHEDULE_NAME, TRIGGER_TIME
from emulator.services import assets, jobs, schedules

ENV = "py"


def definition(azure) -> dict:
    return {"jobType": "Command", "command": "echo hi",  # no compute: serverless
            "environmentId": azure.ref.child_id("environments", ENV) + "/versions/1"}


def schedule_body(azure, expression: str = "* * * * *", enabled: bool = True) -> dict:
    return {"properties": {"isEnabled": enabled, "trigger": {"triggerType": "Cron", "expression": expression},
                           "action": {"actionType": "CreateJob", "jobDefinition": definition(azure)}}}


@pytest.fixture
def ready(azure, store):
    with store.transaction() as repo:
        assets.put(repo, azure.ref, assets.ENVIRONMENTS, ENV, "1", {"properties": {"image": "python:3.11-slim"}},
                   azure.clock())


def put(azure, store, name: str, body: dict):
    with store.transaction() as repo:
        schedules.put(repo, azure.ref, name, body, azure.clock(), azure.settings.time_scale)


def made(azure, store) -> list[tuple[str, str, str]]:
    with store.transaction() as repo:
        return sorted((j.name, j.status, j.body["properties"][SCHEDULE_NAME]) for j in repo.jobs(azure.ref.key))


def test_each_occurrence_makes_one_job_even_across_a_restart(azure, store, settings, clock, ready):
    put(azure, store, "every-minute", schedule_body(azure))  # at 12:00:00: 12:00 itself is not owed
    controller = ScheduleReconciler(settings, store, clock)
    assert controller.tick() == [] and made(azure, store) == []
    clock.advance(60)
    (fired,) = controller.tick()
    assert fired.job == "every-minute-202601011201"
    clock.advance(30)
    assert controller.tick() == []
    clock.advance(90)  # 12:03:00
    assert [f.job for f in controller.tick()] == ["every-minute-202601011202", "every-minute-202601011203"]
    assert ScheduleReconciler(settings, store, clock).tick() == []  # a restarted controller owes nothing
    assert made(azure, store) == [(f"every-minute-20260101120{m}", "NotStarted", "every-minute") for m in (1, 2, 3)]
    with store.transaction() as repo:
        job = repo.job(azure.ref.child_id("jobs", "every-minute-202601011202"))
        assert job.body["properties"][TRIGGER_TIME] == "2026-01-01T12:02:00+00:00"
        assert job.body["command"] == "echo hi" and job.compute_key.endswith("serverless.dedicated.standard_ds3_v2")


def test_a_pass_killed_before_its_commit_leaves_its_occurrences_to_the_next_one(azure, store, settings, clock,
                                                                                ready, monkeypatch):
    put(azure, store, "every-minute", schedule_body(azure))
    clock.advance(120)
    submit, calls = jobs.put, []

    def dies_on_the_second(*args, **kwargs):
        calls.append(args[2])
        if len(calls) == 2:
            raise RuntimeError("SIGKILL")  # the transaction never commits: the first job goes with it
        return submit(*args, **kwargs)

    monkeypatch.setattr(jobs, "put", dies_on_the_second)
    with pytest.raises(RuntimeError):
        ScheduleReconciler(settings, store, clock).tick()
    assert made(azure, store) == []
    monkeypatch.setattr(jobs, "put", submit)
    assert [f.job for f in ScheduleReconciler(settings, store, clock).tick()] == \
        ["every-minute-202601011201", "every-minute-202601011202"]
    assert len(made(azure, store)) == 2


def test_the_time_scale_runs_the_calendar_faster(azure, store, settings, clock, ready):
    fast = settings.model_copy(update={"time_scale": 0.1})  # a minute in 6 s
    azure.settings = fast
    put(azure, store, "every-minute", schedule_body(azure))
    controller = ScheduleReconciler(fast, store, clock)
    clock.advance(5.9)
    assert controller.tick() == []
    clock.advance(0.1)
    assert [f.job for f in controller.tick()] == ["every-minute-202601011201"]
    clock.advance(12)
    assert len(controller.tick()) == 2


def test_a_disabled_schedule_makes_nothing_and_owes_nothing_when_enabled_again(azure, store, settings, clock, ready):
    put(azure, store, "paused", schedule_body(azure, enabled=False))
    controller = ScheduleReconciler(settings, store, clock)
    clock.advance(600)
    assert controller.tick() == []
    put(azure, store, "paused", schedule_body(azure))  # at 12:10:00
    clock.advance(59)
    assert controller.tick() == []
    clock.advance(1)
    assert [f.job for f in controller.tick()] == ["paused-202601011211"]
    put(azure, store, "paused", schedule_body(azure, enabled=False))
    clock.advance(300)
    assert controller.tick() == [] and len(made(azure, store)) == 1


def test_deleting_a_schedule_leaves_its_jobs(azure, store, settings, clock, ready):
    put(azure, store, "gone", schedule_body(azure))
    clock.advance(60)
    ScheduleReconciler(settings, store, clock).tick()
    with store.transaction() as repo:
        assert schedules.delete(repo, azure.ref, "gone")
    clock.advance(600)
    assert ScheduleReconciler(settings, store, clock).tick() == []
    assert [name for name, *_ in made(azure, store)] == ["gone-202601011201"]


def test_an_occurrence_whose_job_cannot_be_made_says_why_and_the_next_one_tries_again(azure, store, settings, clock,
                                                                                      ready):
    put(azure, store, "orphan", schedule_body(azure))
    with store.transaction() as repo:  # its environment goes after the schedule was made
        version = repo.asset_version(azure.ref.child_id("environments", ENV) + "/versions/1")
        repo.remove(version)
    clock.advance(60)
    (fired,) = ScheduleReconciler(settings, store, clock).tick()
    assert fired.job is None and "py" in fired.error
    with store.transaction() as repo:
        row = repo.schedule(azure.ref.child_id("schedules", "orphan"))
        assert row.last_error["occurrence"] == "2026-01-01T12:01:00+00:00" and row.last_job is None
    with store.transaction() as repo:
        assets.put(repo, azure.ref, assets.ENVIRONMENTS, ENV, "1", {"properties": {"image": "python:3.11-slim"}},
                   clock())
    clock.advance(60)
    assert [f.job for f in ScheduleReconciler(settings, store, clock).tick()] == ["orphan-202601011202"]
