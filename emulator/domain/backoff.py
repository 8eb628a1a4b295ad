"""Retrying a container that would not start: a second after the first failure, doubling to a minute, so a broken
mount or a missing image costs the engine one try a minute rather than two a second. Pure: time comes in."""

from dataclasses import dataclass
from datetime import datetime, timedelta

FIRST_SECONDS = 1.0
MOST_SECONDS = 60.0


@dataclass(frozen=True)
class Failure:
    reason: str
    count: int  # failures in a row
    retry_at: datetime


def failed(previous: Failure | None, reason: str, now: datetime) -> Failure:
    count = (previous.count if previous else 0) + 1
    delay = min(MOST_SECONDS, FIRST_SECONDS * 2 ** (count - 1))
    return Failure(reason, count, now + timedelta(seconds=delay))


def due(failure: Failure | None, now: datetime) -> bool:
    return failure is None or now >= failure.retry_at


def news(previous: Failure | None, reason: str) -> bool:
    """Worth a line in the log: the first failure, or a reason other than the last one's."""
    return previous is None or previous.reason != reason
