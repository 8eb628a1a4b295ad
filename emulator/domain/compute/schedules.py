"""Compute-instance start/stop schedules: Azure's `schedules.computeStartStop` (Cron or Recurrence, a time zone),
validated, echoed back normalised, and asked which fired in a stretch of time.

Schedules name clock times ("stop at 18:00 in Pacific time"). At time scale 1 they follow the wall clock; a
smaller time scale runs their calendar faster from the instance's creation (`calendar.emulated`), so a test or a
demo sees the evening's stop and the morning's start within minutes. Pure: `now` comes in.
"""

import hashlib
from dataclasses import dataclass
from datetime import datetime
from zoneinfo import ZoneInfo

from croniter import croniter

from emulator.domain import calendar
from emulator.domain.calendar import WEEKDAYS
from emulator.errors import ValidationFailed

TARGET = "properties.properties.schedules.computeStartStop"
MAX_SCHEDULES = 4  # Azure's limit per instance
ACTIONS = {"start": "Start", "stop": "Stop"}


@dataclass(frozen=True)
class StartStop:
    action: str  # Start or Stop
    enabled: bool
    expression: str  # five-field cron, in `zone`
    zone: str  # as given (Windows or IANA name)
    start: datetime | None  # nothing fires before it (aware, in `zone`)
    arm: dict  # the item as it is echoed back

    def to_arm(self) -> dict:
        return self.arm

    def tz(self) -> ZoneInfo:
        return calendar.zone(self.zone, "")


def _choice(value: object, allowed: dict[str, str], target: str) -> str:
    if not isinstance(value, str) or value.lower() not in allowed:
        raise ValidationFailed(f"{target} must be one of {', '.join(allowed.values())}; got {value!r}.",
                               target=target)
    return allowed[value.lower()]


def _recurrence_cron(recurrence: dict, target: str) -> str:
    """A Recurrence trigger as the equivalent cron: daily or weekly at the given hours and minutes."""
    frequency = _choice(recurrence.get("frequency"), {"day": "Day", "week": "Week"}, f"{target}.frequency")
    if recurrence.get("interval", 1) != 1:
        raise ValidationFailed(f"{target}.interval: only an interval of 1 is emulated; got "
                               f"{recurrence.get('interval')!r}.", target=f"{target}.interval")
    pattern = recurrence.get("schedule") or {}
    fields = {}
    for key, top in (("minutes", 59), ("hours", 23)):
        values = pattern.get(key) or [0]
        if not all(isinstance(v, int) and 0 <= v <= top for v in values):
            raise ValidationFailed(f"{target}.schedule.{key} must be integers from 0 to {top}; got {values!r}.",
                                   target=f"{target}.schedule.{key}")
        fields[key] = ",".join(str(v) for v in sorted(set(values)))
    days = "*"
    if frequency == "Week":
        names = pattern.get("weekDays") or []
        if not names or not all(isinstance(d, str) and d.lower() in WEEKDAYS for d in names):
            raise ValidationFailed(f"{target}.schedule.weekDays must name days (Monday ... Sunday); got {names!r}.",
                                   target=f"{target}.schedule.weekDays")
        days = ",".join(str(WEEKDAYS[d.lower()]) for d in names)
    return f"{fields['minutes']} {fields['hours']} * * {days}"


def _one(item: object, index: int) -> StartStop:
    target = f"{TARGET}[{index}]"
    if not isinstance(item, dict):
        raise ValidationFailed(f"{target} must be an object.", target=target)
    action = _choice(item.get("action"), ACTIONS, f"{target}.action")
    status = _choice(item.get("status") or "Enabled", {"enabled": "Enabled", "disabled": "Disabled"},
                     f"{target}.status")
    kind = _choice(item.get("triggerType"), {"cron": "Cron", "recurrence": "Recurrence"}, f"{target}.triggerType")
    trigger = item.get("cron" if kind == "Cron" else "recurrence")
    where = f"{target}.{'cron' if kind == 'Cron' else 'recurrence'}"
    if not isinstance(trigger, dict):
        raise ValidationFailed(f"{where} is required for triggerType {kind}.", target=where)
    expression = (calendar.cron(trigger.get("expression"), f"{where}.expression") if kind == "Cron"
                  else _recurrence_cron(trigger, where))
    zone_name = trigger.get("timeZone") or "UTC"
    zone = calendar.zone(zone_name, f"{where}.timeZone")
    start = calendar.moment(trigger.get("startTime"), zone, f"{where}.startTime")
    echoed = {k: v for k, v in trigger.items() if k != "triggerType"}
    echoed["timeZone"] = zone_name
    digest = hashlib.sha1(f"{index}:{action}:{expression}:{zone_name}".encode()).hexdigest()
    arm = {"id": f"{digest[:8]}-{digest[8:12]}-{digest[12:16]}-{digest[16:20]}-{digest[20:32]}",
           "provisioningStatus": "Completed", "status": status, "action": action, "triggerType": kind,
           "cron" if kind == "Cron" else "recurrence": echoed}
    return StartStop(action, status == "Enabled", expression, zone_name, start, arm)


def parse(raw: object) -> list[StartStop]:
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise ValidationFailed(f"{TARGET} must be a list.", target=TARGET)
    if len(raw) > MAX_SCHEDULES:
        raise ValidationFailed(f"{TARGET} has {len(raw)} schedules; a compute instance takes at most "
                               f"{MAX_SCHEDULES}.", target=TARGET)
    return [_one(item, i) for i, item in enumerate(raw)]


def due(schedules: list[StartStop], since: datetime, now: datetime) -> list[str]:
    """The actions of enabled schedules that fired in (since, now], in firing order: the last one wins."""
    fired: list[tuple[datetime, str]] = []
    for schedule in (s for s in schedules if s.enabled):
        zone = schedule.tz()
        origin = max(since, schedule.start) if schedule.start else since
        times = croniter(schedule.expression, origin.astimezone(zone))
        while (moment := times.get_next(datetime)) <= now:
            fired.append((moment, schedule.action))
            if len(fired) > 10_000:  # a window of years: only the latest firings matter
                break
    return [action for _moment, action in sorted(fired)]
