"""Probe timing with a fake clock: early readiness tries from an instance's start, the configured schedule
for failures and liveness."""

from datetime import UTC, datetime, timedelta

from emulator.domain.serving.deployments import Probe
from emulator.domain.serving.probing import EARLY, EARLY_TIMEOUT_SECONDS, SCHEDULED, Probed

T0 = datetime(2026, 11, 25, 6, 0, tzinfo=UTC)
AZURE = Probe(initial_delay=10, period=10, timeout=2, success_threshold=1, failure_threshold=30)  # the defaults
LIVENESS = Probe(initial_delay=10, period=10, timeout=2, success_threshold=1, failure_threshold=3)


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def test_readiness_is_tried_early_and_often_until_the_first_answer_whatever_the_initial_delay():
    probed = Probed(since=T0)
    assert probed.due(at(0), AZURE, LIVENESS) == EARLY
    assert probed.timeout(EARLY, AZURE) == EARLY_TIMEOUT_SECONDS
    assert not probed.record(EARLY, at(0), False, AZURE, LIVENESS)
    assert probed.due(at(0.1), AZURE, LIVENESS) is None  # not more often than every 0.25 s
    assert probed.due(at(0.25), AZURE, LIVENESS) == EARLY
    # Early failures are the server starting, not failed probes: they count for nothing.
    assert (probed.failures, probed.ready) == (0, False)
    probed.record(EARLY, at(1.0), True, AZURE, LIVENESS)
    assert probed.ready and probed.ever_ready
    # From then on only the configured schedule: the first scheduled try at initialDelay.
    assert probed.due(at(5), AZURE, LIVENESS) is None
    assert probed.due(at(10), AZURE, LIVENESS) == SCHEDULED and probed.timeout(SCHEDULED, AZURE) == 2


def test_failures_count_on_the_schedule_and_liveness_keeps_its_initial_delay():
    quick = Probe(initial_delay=0, period=1, timeout=2, success_threshold=1, failure_threshold=2)
    probed = Probed(since=T0)
    probed.record(EARLY, at(0.5), True, quick, LIVENESS)
    # Scheduled failures before liveness' 10 s initial delay make it unready, but do not replace it.
    assert not probed.record(SCHEDULED, at(1), False, quick, LIVENESS)
    assert not probed.record(SCHEDULED, at(2), False, quick, LIVENESS)
    assert not probed.ready
    assert not probed.record(SCHEDULED, at(3), False, quick, LIVENESS) and probed.failures == 3
    assert probed.record(SCHEDULED, at(10), False, quick, LIVENESS)  # past liveness' initial delay: replaced


def test_an_instance_that_never_answers_fails_readiness_only_on_the_schedule():
    probed = Probed(since=T0)
    for tenth in range(0, 95, 3):
        kind = probed.due(at(tenth / 10), AZURE, LIVENESS)
        if kind:
            probed.record(kind, at(tenth / 10), False, AZURE, LIVENESS)
    assert probed.failures == 0  # 9.5 s of early tries: none counted
    assert probed.due(at(10), AZURE, LIVENESS) == SCHEDULED
    probed.record(SCHEDULED, at(10), False, AZURE, LIVENESS)
    assert probed.failures == 1
