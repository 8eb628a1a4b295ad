"""What every schedule shares (compute instances' start/stop, job schedules): time zones by Azure's names, cron
expressions, ISO times in a zone, and the emulated calendar a time scale runs faster. Pure: `now` comes in.
"""

from datetime import datetime
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from croniter import CroniterBadCronError, CroniterBadDateError, CroniterNotAlphaError, croniter
from tzlocal.windows_tz import win_tz

from emulator.errors import ValidationFailed

WEEKDAYS = {"sunday": 0, "monday": 1, "tuesday": 2, "wednesday": 3, "thursday": 4, "friday": 5, "saturday": 6}
# The SDK and the portal send Windows zone names (azure.ai.ml.constants.TimeZone); zoneinfo knows IANA ones.
# CLDR's mapping (tzlocal's copy) covers all but two of the SDK's names.
WINDOWS_ZONES = {**{name.lower(): iana for name, iana in win_tz.items()},
                 "utc": "UTC", "coordinated universal time": "UTC",
                 "mid-atlantic standard time": "Etc/GMT+2", "kamchatka standard time": "Asia/Kamchatka"}


def zone(name: object, target: str) -> ZoneInfo:
    if not isinstance(name, str) or not name:
        raise ValidationFailed(f"{target} must name a time zone; got {name!r}.", target=target)
    try:
        return ZoneInfo(WINDOWS_ZONES.get(name.lower(), name))
    except (ZoneInfoNotFoundError, ValueError) as exc:
        raise ValidationFailed(f"{target} '{name}' is not a known time zone; use an IANA name (Europe/Paris) or a "
                               "Windows one (Pacific Standard Time).", target=target) from exc


def cron(expression: object, target: str) -> str:
    """A five-field cron expression (Azure's NCronTab: minute hour day month weekday), checked by croniter."""
    if not isinstance(expression, str) or len(expression.split()) != 5:
        raise ValidationFailed(f"{target} must be a five-field cron expression (minute hour day month weekday); "
                               f"got {expression!r}.", target=target)
    try:
        croniter(expression)
    except (CroniterBadCronError, CroniterBadDateError, CroniterNotAlphaError, ValueError, KeyError) as exc:
        raise ValidationFailed(f"{target} '{expression}' is not a valid cron expression ({exc}).",
                               target=target) from exc
    return expression


def moment(value: object, tz: ZoneInfo, target: str) -> datetime | None:
    """An ISO 8601 time; one without an offset is in `tz` (as Azure reads a trigger's startTime and endTime)."""
    if value is None or value == "":
        return None
    try:
        parsed = datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    except ValueError as exc:
        raise ValidationFailed(f"{target} must be an ISO 8601 time; got {value!r}.", target=target) from exc
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=tz)


def emulated(now: datetime, anchor: datetime, time_scale: float) -> datetime:
    """The schedules' calendar: the wall clock at time scale 1, else 1/time_scale times as fast from `anchor`
    (at 0.01 a day passes in 14.4 minutes)."""
    return anchor + (now - anchor) / time_scale
