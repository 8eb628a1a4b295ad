"""A job schedule's trigger (Azure's `Cron` or `Recurrence`), checked and echoed back, and the planner: which
occurrences fall due between the time it last looked and now. Pure: every time comes in.

A Recurrence is a cron pattern of candidate times (croniter walks it) plus an interval counted in its frequency
from its origin (its startTime, else when the schedule was made): every 2nd day at 09:30 is "30 9 * * *" kept
on even days from the origin.
"""

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

from croniter import croniter

from emulator.domain import calendar, payload
from emulator.domain.calendar import WEEKDAYS
from emulator.errors import ValidationFailed

TARGET = "properties.trigger"
KINDS = {"cron": "Cron", "recurrence": "Recurrence"}
FREQUENCIES = {"minute": "Minute", "hour": "Hour", "day": "Day", "week": "Week", "month": "Month"}
MAX_INTERVAL = 1000
_STEPS = 200_000  # candidate times the planner walks at most in one look (years of minutes)


@dataclass(frozen=True)
class Trigger:
    kind: str  # Cron or Recurrence
    zone: str  # as given (Windows or IANA name)
    start: datetime | None  # nothing fires before it
    end: datetime | None  # nor after it
    expression: str | None = None  # Cron
    frequency: str | None = None  # Recurrence: Minute ... Month
    interval: int = 1
    pattern: dict | None = None  # Recurrence: {hours, minutes, weekDays, monthDays}, checked
    arm: dict | None = None  # as echoed back

    def tz(self) -> ZoneInfo:
        return calendar.zone(self.zone, "")


def _ints(values: object, low: int, high: int, target: str) -> list[int]:
    values = [values] if isinstance(values, int) else values
    if values is None:
        return []
    if not isinstance(values, list) or not all(isinstance(v, int) and not isinstance(v, bool) and low <= v <= high
                                               for v in values):
        raise ValidationFailed(f"{target} must be integers from {low} to {high}; got {values!r}.", target=target)
    return sorted(set(values))


def _pattern(raw: object, target: str) -> dict:
    raw = payload.obj(raw, target)
    days = raw.get("weekDays") or []
    days = [days] if isinstance(days, str) else days
    if not isinstance(days, list) or not all(isinstance(d, str) and d.lower() in WEEKDAYS for d in days):
        raise ValidationFailed(f"{target}.weekDays must name days (Monday ... Sunday); got {days!r}.",
                               target=f"{target}.weekDays")
    return {"hours": _ints(raw.get("hours"), 0, 23, f"{target}.hours"),
            "minutes": _ints(raw.get("minutes"), 0, 59, f"{target}.minutes"),
            "weekDays": [d.capitalize() for d in dict.fromkeys(d.lower() for d in days)],
            "monthDays": _ints(raw.get("monthDays"), 1, 31, f"{target}.monthDays")}


def _recurrence(raw: dict, target: str) -> dict:
    frequency = raw.get("frequency")
    if not isinstance(frequency, str) or frequency.lower() not in FREQUENCIES:
        raise ValidationFailed(f"{target}.frequency must be one of {', '.join(FREQUENCIES.values())}; got "
                               f"{frequency!r}.", target=f"{target}.frequency")
    interval = raw.get("interval", 1)
    if not isinstance(interval, int) or isinstance(interval, bool) or not 1 <= interval <= MAX_INTERVAL:
        raise ValidationFailed(f"{target}.interval must be an integer from 1 to {MAX_INTERVAL}; got {interval!r}.",
                               target=f"{target}.interval")
    return {"frequency": FREQUENCIES[frequency.lower()], "interval": interval,
            "pattern": _pattern(raw.get("schedule"), f"{target}.schedule")}


def parse(raw: object, target: str = TARGET) -> Trigger:
    raw = payload.obj(raw, target, required=True)
    kind = raw.get("triggerType")
    if not isinstance(kind, str) or kind.lower() not in KINDS:
        raise ValidationFailed(f"{target}.triggerType must be Cron or Recurrence; got {kind!r}.",
                               target=f"{target}.triggerType")
    kind = KINDS[kind.lower()]
    zone_name = raw.get("timeZone") or "UTC"
    tz = calendar.zone(zone_name, f"{target}.timeZone")
    start = calendar.moment(raw.get("startTime"), tz, f"{target}.startTime")
    end = calendar.moment(raw.get("endTime"), tz, f"{target}.endTime")
    if start and end and end <= start:
        raise ValidationFailed(f"{target}.endTime must come after startTime.", target=f"{target}.endTime")
    arm = {**raw, "triggerType": kind, "timeZone": zone_name}
    if kind == "Cron":
        return Trigger(kind, zone_name, start, end, expression=calendar.cron(raw.get("expression"),
                                                                               f"{target}.expression"), arm=arm)
    recurrence = _recurrence(raw, target)
    pattern = {k: v for k, v in recurrence["pattern"].items() if v}
    arm.update(frequency=recurrence["frequency"], interval=recurrence["interval"], schedule=pattern or None)
    return Trigger(kind, zone_name, start, end, frequency=recurrence["frequency"], interval=recurrence["interval"],
                   pattern=recurrence["pattern"], arm={k: v for k, v in arm.items() if v is not None})


def _listed(values: list, default: int) -> str:
    return ",".join(str(v) for v in values) if values else str(default)


def candidates(trigger: Trigger, origin: datetime) -> str:
    """The cron pattern of the times the trigger may fire at; `origin` (in the trigger's zone) fills what a
    Recurrence leaves out, as Azure takes it from the start time."""
    if trigger.kind == "Cron":
        return trigger.expression
    p = trigger.pattern
    minutes, hours = _listed(p["minutes"], origin.minute), _listed(p["hours"], origin.hour)
    return {"Minute": "* * * * *",
            "Hour": f"{_listed(p['minutes'], origin.minute)} * * * *",
            "Day": f"{minutes} {hours} * * *",
            "Week": f"{minutes} {hours} * * "
                    + (",".join(str(WEEKDAYS[d.lower()]) for d in p["weekDays"]) or str(origin.isoweekday() % 7)),
            "Month": f"{minutes} {hours} {_listed(p['monthDays'], origin.day)} * *"}[trigger.frequency]


def _period(frequency: str, moment: datetime) -> int:
    """Which minute, hour, day, week or month `moment` (in the trigger's zone) falls in, counted from an epoch."""
    day = moment.date().toordinal()
    return {"Minute": int(moment.timestamp() // 60), "Hour": int(moment.timestamp() // 3600), "Day": day,
            "Week": (day - 1) // 7,  # ordinal 1 is a Monday: weeks start on Mondays
            "Month": moment.year * 12 + moment.month}[frequency]


def due(trigger: Trigger, origin: datetime, since: datetime, now: datetime, limit: int) -> list[datetime]:
    """The occurrences (UTC) in (since, now] within the trigger's start and end, oldest first: at most `limit`, the
    latest ones (a controller that was down for days runs a backlog of `limit`, not every missed one)."""
    tz = trigger.tz()
    origin = (trigger.start or origin).astimezone(tz)
    upper = min(now, trigger.end) if trigger.end else now
    lower = max(since, trigger.start - timedelta(microseconds=1)) if trigger.start else since
    if upper <= lower:
        return []
    first = _period(trigger.frequency, origin) if trigger.kind == "Recurrence" else 0
    # croniter's get_prev gives times strictly before its base: a base just past `upper` includes upper itself
    walk = croniter(candidates(trigger, origin), (upper + timedelta(seconds=1)).astimezone(tz))
    found: list[datetime] = []
    for _ in range(_STEPS):
        moment = walk.get_prev(datetime)
        if moment <= lower or len(found) == limit:
            break
        if moment > upper:
            continue
        if trigger.kind == "Cron" or (_period(trigger.frequency, moment) - first) % trigger.interval == 0:
            found.append(moment.astimezone(UTC))
    return sorted(found)
