"""Job schedules' triggers: what the SDK sends parses, bad ones are refused naming the field, and the planner says
which occurrences fell due between two moments, in the trigger's own zone, within its start and end, each once."""

from datetime import UTC, datetime, timedelta

import pytest
from azure.ai.ml.constants import TimeZone
from azure.ai.ml.entities import CronTrigger, RecurrencePattern, RecurrenceTrigger

from emulator.domain import calendar
from emulator.domain.jobs import triggers
from emulator.errors import ValidationFailed

T = "properties.trigger"
ORIGIN = datetime(2026, 1, 5, 10, 0, 30, tzinfo=UTC)  # a Monday


def at(*parts) -> datetime:
    return datetime(*parts, tzinfo=UTC)


def due(raw: dict, since: datetime, now: datetime, limit: int = 100, origin: datetime = ORIGIN) -> list[datetime]:
    return triggers.due(triggers.parse(raw), origin, since, now, limit)


def test_what_the_sdk_sends_parses_and_echoes_back_in_azures_spelling():
    cron = triggers.parse(CronTrigger(expression="15 * * * *", time_zone=TimeZone.PACIFIC_STANDARD_TIME,
                                      start_time="2026-01-05T09:00:00")._to_rest_object().as_dict())
    assert (cron.kind, cron.expression, cron.zone) == ("Cron", "15 * * * *", "Pacific Standard Time")
    assert cron.start == datetime(2026, 1, 5, 17, 0, tzinfo=UTC)  # a start without offset is in the trigger's zone
    recurrence = triggers.parse(RecurrenceTrigger(
        frequency="week", interval=2, schedule=RecurrencePattern(hours=[8], minutes=[30], week_days=["monday"]))
        ._to_rest_object().as_dict())
    assert recurrence.arm == {"triggerType": "Recurrence", "frequency": "Week", "interval": 2, "timeZone": "UTC",
                              "schedule": {"hours": [8], "minutes": [30], "weekDays": ["Monday"]}}


@pytest.mark.parametrize("zone", [z.value for z in TimeZone])
def test_every_time_zone_the_sdk_offers_is_known(zone):
    assert calendar.zone(zone, "t") is not None


def test_every_minute_fires_once_per_minute_and_never_twice():
    raw = {"triggerType": "Cron", "expression": "* * * * *"}
    assert due(raw, ORIGIN, ORIGIN + timedelta(minutes=3)) == [at(2026, 1, 5, 10, m) for m in (1, 2, 3)]
    assert due(raw, at(2026, 1, 5, 10, 3), at(2026, 1, 5, 10, 3, 59)) == []  # (since, now]: since is done
    assert due(raw, at(2026, 1, 5, 10, 2, 59), at(2026, 1, 5, 10, 3)) == [at(2026, 1, 5, 10, 3)]  # now included


def test_cron_reads_the_clock_of_its_time_zone_summer_time_included():
    raw = {"triggerType": "Cron", "expression": "0 9 * * *", "timeZone": "Pacific Standard Time"}
    assert due(raw, at(2026, 1, 5), at(2026, 1, 6)) == [at(2026, 1, 5, 17)]  # PST: UTC-8
    assert due(raw, at(2026, 7, 5), at(2026, 7, 6)) == [at(2026, 7, 5, 16)]  # PDT: UTC-7


def test_nothing_fires_before_the_start_or_after_the_end():
    raw = {"triggerType": "Cron", "expression": "0 * * * *", "startTime": "2026-01-05T12:00:00",
           "endTime": "2026-01-05T14:00:00"}
    assert due(raw, ORIGIN, at(2026, 1, 6)) == [at(2026, 1, 5, h) for h in (12, 13, 14)]


def test_a_backlog_fires_only_its_latest_occurrences():
    raw = {"triggerType": "Cron", "expression": "* * * * *"}
    assert due(raw, ORIGIN, ORIGIN + timedelta(days=30), limit=3) == [at(2026, 2, 4, 9, 58), at(2026, 2, 4, 9, 59),
                                                                       at(2026, 2, 4, 10, 0)]


@pytest.mark.parametrize(("recurrence", "window", "expected"), [
    # every 5 minutes, counted from the origin's minute
    ({"frequency": "Minute", "interval": 5}, timedelta(minutes=16),
     [at(2026, 1, 5, 10, m) for m in (5, 10, 15)]),
    # every 3 hours at the origin's minute
    ({"frequency": "Hour", "interval": 3}, timedelta(hours=7), [at(2026, 1, 5, 13), at(2026, 1, 5, 16)]),
    # every 2nd day at 09:30 and 18:00
    ({"frequency": "Day", "interval": 2, "schedule": {"hours": [9, 18], "minutes": [30]}}, timedelta(days=5),
     [at(2026, 1, 5, 18, 30), at(2026, 1, 7, 9, 30), at(2026, 1, 7, 18, 30), at(2026, 1, 9, 9, 30),
      at(2026, 1, 9, 18, 30)]),
    # every other week, Mondays and Fridays at 08:00
    ({"frequency": "Week", "interval": 2, "schedule": {"hours": [8], "minutes": [0],
                                                       "weekDays": ["Monday", "friday"]}}, timedelta(days=21),
     [at(2026, 1, 9, 8), at(2026, 1, 19, 8), at(2026, 1, 23, 8)]),
    # quarterly on the 15th at 01:00
    ({"frequency": "Month", "interval": 3, "schedule": {"hours": [1], "minutes": [0], "monthDays": [15]}},
     timedelta(days=200), [at(2026, 1, 15, 1), at(2026, 4, 15, 1), at(2026, 7, 15, 1)]),
])
def test_a_recurrence_fires_on_its_pattern_every_interval_from_its_origin(recurrence, window, expected):
    assert due({"triggerType": "Recurrence", **recurrence}, ORIGIN, ORIGIN + window) == expected


@pytest.mark.parametrize(("raw", "target"), [
    ({"triggerType": "Cron", "expression": "61 * * * *"}, f"{T}.expression"),
    ({"triggerType": "Cron", "expression": "* * * *"}, f"{T}.expression"),
    ({"triggerType": "Cron"}, f"{T}.expression"),
    ({"triggerType": "Cron", "expression": "* * * * *", "timeZone": "Mars Standard Time"}, f"{T}.timeZone"),
    ({"triggerType": "Cron", "expression": "* * * * *", "startTime": "soon"}, f"{T}.startTime"),
    ({"triggerType": "Cron", "expression": "* * * * *", "startTime": "2026-01-02T00:00:00",
      "endTime": "2026-01-01T00:00:00"}, f"{T}.endTime"),
    ({"triggerType": "Once"}, f"{T}.triggerType"),
    ({"triggerType": "Recurrence", "frequency": "Fortnight", "interval": 1}, f"{T}.frequency"),
    ({"triggerType": "Recurrence", "frequency": "Day", "interval": 0}, f"{T}.interval"),
    ({"triggerType": "Recurrence", "frequency": "Day", "interval": True}, f"{T}.interval"),
    ({"triggerType": "Recurrence", "frequency": "Day", "schedule": {"hours": [24]}}, f"{T}.schedule.hours"),
    ({"triggerType": "Recurrence", "frequency": "Week", "schedule": {"weekDays": ["Someday"]}},
     f"{T}.schedule.weekDays"),
    ({"triggerType": "Recurrence", "frequency": "Month", "schedule": {"monthDays": [0]}}, f"{T}.schedule.monthDays"),
    ("every minute", T),
])
def test_bad_triggers_are_refused_naming_the_field(raw, target):
    with pytest.raises(ValidationFailed) as caught:
        triggers.parse(raw)
    assert caught.value.target == target
