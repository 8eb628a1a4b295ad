"""ISO 8601 durations as ARM carries them (nodeIdleTimeBeforeScaleDown, idleTimeBeforeShutdown)."""

from datetime import timedelta

import isodate

from emulator.errors import ValidationFailed

MAX_SECONDS = 10 * 365 * 24 * 3600  # ten years: anything longer is a typo, and timedelta has limits


def parse_seconds(value: object, target: str) -> float:
    if not isinstance(value, str):
        raise ValidationFailed(f"{target} must be an ISO 8601 duration string such as 'PT120S'.", target=target)
    try:
        duration = isodate.parse_duration(value)
        if isinstance(duration, isodate.Duration):  # years or months: no fixed length
            raise ValidationFailed(f"{target} '{value}' must not use years or months.", target=target)
        seconds = duration.total_seconds()
    except (isodate.ISO8601Error, ValueError, OverflowError) as exc:
        raise ValidationFailed(f"{target} '{value}' is not an ISO 8601 duration ({exc}).", target=target) from exc
    if not 0 <= seconds <= MAX_SECONDS:
        raise ValidationFailed(f"{target} must be between PT0S and ten years, got '{value}'.", target=target)
    return seconds


def format_seconds(seconds: float) -> str:
    return isodate.duration_isoformat(timedelta(seconds=seconds))
