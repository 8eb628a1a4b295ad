"""The controller says each new reason a container would not start once in its log, not on every pass."""

import logging
from datetime import UTC, datetime, timedelta

from emulator.controller.start_failures import StartFailures

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def test_the_same_reason_is_logged_once_and_a_success_ends_the_backoff(caplog):
    failures = StartFailures()
    with caplog.at_level(logging.INFO, "amlemu.controller"):
        for second in range(0, 64, 1):
            now = T0 + timedelta(seconds=second)
            if failures.due("c1", now):
                failures.failed("c1", "node n1 of c1", "volume name is too short", now)
        assert caplog.text.count("volume name is too short") == 1
        assert failures.failures["c1"].count == 7  # at 0, 1, 3, 7, 15, 31 and 63 s: not 64 tries
        failures.failed("c1", "node n1 of c1", "no such image", T0 + timedelta(seconds=64))
        assert "no such image" in caplog.text
        assert failures.started("c1", "node n2 of c1")
        assert "started after 8 failed tries" in caplog.text
    assert failures.due("c1", T0) and not failures.started("c1", "node n3 of c1")
