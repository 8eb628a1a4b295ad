"""A container that would not start is tried again after 1 s, then 2, 4 ... up to a minute; its reason is news
once, not on every try."""

from datetime import UTC, datetime, timedelta

from emulator.domain import backoff

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def test_retries_wait_twice_as_long_each_time_up_to_a_minute():
    failure, waits = None, []
    for _ in range(9):
        failure = backoff.failed(failure, "no such image", T0)
        waits.append((failure.retry_at - T0).total_seconds())
    assert waits == [1, 2, 4, 8, 16, 32, 60, 60, 60]
    assert failure.count == 9


def test_a_retry_is_due_once_its_time_has_come_and_always_without_a_failure():
    failure = backoff.failed(None, "broken mount", T0)
    assert not backoff.due(failure, T0 + timedelta(seconds=0.5))
    assert backoff.due(failure, T0 + timedelta(seconds=1))
    assert backoff.due(None, T0)


def test_only_a_first_or_a_different_reason_is_news():
    failure = backoff.failed(None, "broken mount", T0)
    assert backoff.news(None, "broken mount")
    assert not backoff.news(failure, "broken mount")
    assert backoff.news(failure, "no such image")
