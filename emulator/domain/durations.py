"""ISO 8601 durations as ARM carries them (nodeIdleTimeBeforeScaleDown, idleTimeBeforeShutdown)."""

import isodate

from emulator.errors import ValidationFailed


def parse_seconds(value: object, target: str) -> float:
    if not isinstance(value, str):
        raise ValidationFailed(f"{target} must be an ISO 8601 duration string such as 'PT120S'.", target=target)
    try:
        duration = isodate.parse_duration(value)
    except (isodate.ISO8601Error, ValueError) as exc:
        raise ValidationFailed(f"{target} '{value}' is not an ISO 8601 duration ({exc}).", target=target) from exc
    if isinstance(duration, isodate.Duration):  # years or months: no fixed length
        raise ValidationFailed(f"{target} '{value}' must not use years or months.", target=target)
    seconds = duration.total_seconds()
    if seconds < 0:
        raise ValidationFailed(f"{target} must not be negative.", target=target)
    return seconds


def format_seconds(seconds: float) -> str:
    return f"PT{seconds:g}S"
