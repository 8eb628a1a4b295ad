"""Start/stop schedules: what the SDK sends parses, bad items are refused naming the field, and `due` says which
fired between two moments, in the schedule's own time zone (summer time included)."""

from datetime import UTC, datetime, timedelta

import pytest
from azure.ai.ml.entities import (
    ComputeInstance,
    ComputeSchedules,
    ComputeStartStopSchedule,
    CronTrigger,
    RecurrencePattern,
    RecurrenceTrigger,
)

from emulator.domain import calendar
from emulator.domain.compute import schedules
from emulator.errors import ValidationFailed

T = "properties.properties.schedules.computeStartStop"


def cron(expression: str, action: str = "Stop", zone: str = "UTC", **extra) -> dict:
    return {"status": "Enabled", "action": action, "triggerType": "Cron",
            "cron": {"expression": expression, "timeZone": zone, **extra}}


def test_what_the_sdk_sends_parses():
    ci = ComputeInstance(name="x", schedules=ComputeSchedules(compute_start_stop=[
        ComputeStartStopSchedule(trigger=CronTrigger(expression="0 18 * * 1-5", time_zone="Pacific Standard Time"),
                                 action="stop"),
        ComputeStartStopSchedule(trigger=RecurrenceTrigger(frequency="week", interval=1, schedule=RecurrencePattern(
            hours=[8], minutes=[30], week_days=["monday", "friday"])), action="start")]))
    raw = ci._to_rest_object().as_dict()["properties"]["properties"]["schedules"]["computeStartStop"]
    stop, start = schedules.parse(raw)
    assert (stop.action, stop.expression, stop.zone) == ("Stop", "0 18 * * 1-5", "Pacific Standard Time")
    assert (start.action, start.expression) == ("Start", "30 8 * * 1,5")
    echoed = stop.to_arm()
    assert echoed["provisioningStatus"] == "Completed" and echoed["status"] == "Enabled" and echoed["id"]
    assert echoed["cron"] == {"expression": "0 18 * * 1-5", "timeZone": "Pacific Standard Time"}


@pytest.mark.parametrize(("items", "target"), [
    ([cron(f"0 {h} * * *") for h in range(5)], T),
    ([cron("0 25 * * *")], f"{T}[0].cron.expression"),
    ([cron("0 18 * *")], f"{T}[0].cron.expression"),
    ([cron("0 18 * * *", zone="Mars/Olympus")], f"{T}[0].cron.timeZone"),
    ([cron("0 18 * * *", action="Hibernate")], f"{T}[0].action"),
    ([{"action": "Stop", "triggerType": "Cron"}], f"{T}[0].cron"),
    ([{"action": "Stop", "triggerType": "Recurrence", "recurrence": {"frequency": "Day", "interval": 2}}],
     f"{T}[0].recurrence.interval"),
    ([{"action": "Stop", "triggerType": "Recurrence",
       "recurrence": {"frequency": "Week", "schedule": {"hours": [8], "weekDays": ["Funday"]}}}],
     f"{T}[0].recurrence.schedule.weekDays"),
])
def test_bad_schedules_are_refused_naming_the_field(items, target):
    with pytest.raises(ValidationFailed) as refused:
        schedules.parse(items)
    assert refused.value.target == target


def test_due_lists_the_firings_in_order_and_disabled_ones_never_fire():
    stop, start = schedules.parse([cron("0 18 * * *"), cron("0 8 * * *", action="Start")])
    since = datetime(2026, 11, 23, 7, 0, tzinfo=UTC)
    assert schedules.due([stop, start], since, since + timedelta(hours=12)) == ["Start", "Stop"]
    assert schedules.due([stop, start], since, since + timedelta(minutes=30)) == []
    (off,) = schedules.parse([{**cron("* * * * *"), "status": "Disabled"}])
    assert schedules.due([off], since, since + timedelta(hours=1)) == []


def test_a_schedule_follows_its_time_zone_across_summer_time():
    (stop,) = schedules.parse([cron("0 18 * * *", zone="Europe/Paris")])
    winter = datetime(2026, 1, 15, 16, 59, tzinfo=UTC)  # 17:59 in Paris (UTC+1)
    assert schedules.due([stop], winter, winter + timedelta(minutes=2)) == ["Stop"]
    summer = datetime(2026, 7, 15, 15, 59, tzinfo=UTC)  # 17:59 in Paris (UTC+2)
    assert schedules.due([stop], summer, summer + timedelta(minutes=2)) == ["Stop"]
    assert schedules.due([stop], winter - timedelta(hours=1), winter) == []


def test_nothing_fires_before_the_start_time():
    (stop,) = schedules.parse([cron("0 * * * *", startTime="2026-11-23T12:00:00")])
    since = datetime(2026, 11, 23, 9, 30, tzinfo=UTC)
    assert schedules.due([stop], since, since + timedelta(hours=4)) == ["Stop"]  # 10, 11, 12 come before: 13:00 only


def test_the_calendar_is_the_wall_clock_at_scale_one_and_faster_below_it():
    anchor = datetime(2026, 11, 23, 9, 0, tzinfo=UTC)
    later = anchor + timedelta(seconds=36)
    assert calendar.emulated(later, anchor, 1.0) == later
    assert calendar.emulated(later, anchor, 0.01) == anchor + timedelta(hours=1)
    assert calendar.emulated(anchor, anchor, 0.01) == anchor
