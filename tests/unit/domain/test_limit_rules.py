"""When a job has gone past its processes or disk bound, decided from samples and the clock alone."""

import pytest

from emulator.domain.jobs import limits
from emulator.domain.jobs.limits import Breach, PidsWatch


def _feed(samples: list[tuple[float, int | None]], limit: int = 100, sustain: float = 5.0) -> list[Breach | None]:
    watch, verdicts = PidsWatch(), []
    for now, current in samples:
        watch, breach = limits.watch_pids(watch, current, limit, now, sustain)
        verdicts.append(breach)
    return verdicts


def test_a_job_that_stays_at_its_pids_limit_is_stopped_once_the_time_has_passed():
    verdicts = _feed([(0, 100), (1, 100), (4.9, 99), (5.0, 100)])
    assert verdicts[:3] == [None, None, None]
    assert verdicts[3] == Breach("pids", 100, 100)


def test_a_job_that_only_touches_the_limit_is_left_alone():
    # A thread pool grows until it is refused, then works with what it got: the count falls back.
    assert _feed([(0, 100), (2, 100), (3, 40), (6, 100), (10, 100)]) == [None] * 5


def test_a_fork_bombs_dips_below_the_limit_still_count_as_at_it():
    assert limits.at_pids_limit(4096 - 80, 4096) and not limits.at_pids_limit(4096 - 90, 4096)
    assert limits.at_pids_limit(63, 64) and not limits.at_pids_limit(62, 64)  # at least one of room
    assert _feed([(0, 98), (3, 99), (6, 98)])[-1] == Breach("pids", 100, 98)


def test_a_missing_sample_neither_breaks_nor_makes_a_streak():
    assert _feed([(0, 100), (3, None), (6, 100)])[-1] == Breach("pids", 100, 100)
    assert _feed([(0, None), (6, None), (7, 100)]) == [None, None, None]


def test_disk_is_past_its_limit_only_above_it():
    assert limits.check_disk(2**30, 2**30) is None
    assert limits.check_disk(2**30 + 1, 2**30) == Breach("disk", 2**30, 2**30 + 1)


@pytest.mark.parametrize(("walk", "expected"), [(0.01, 105.0), (2.0, 120.0), (30.0, 160.0)])
def test_a_costly_disk_measurement_puts_the_next_one_off_up_to_a_bound(walk, expected):
    assert limits.next_disk_check(100.0, 5.0, walk) == expected


def test_the_failures_name_the_limit_and_its_setting_in_the_shape_of_out_of_memory():
    pids = limits.failure(Breach("pids", 64, 63).to_report(), "tail line")
    assert pids["code"] == "UserError" and pids["innerError"] == {"code": "ProcessLimitExceeded", "limit": 64,
                                                                  "used": 63}
    assert "limit of 64 processes and threads (AMLEMU_JOB_PIDS_LIMIT)" in pids["message"]
    assert pids["message"].endswith("\ntail line")
    disk = limits.failure(Breach("disk", 2**30 // 4, 300 * 2**20).to_report(), "")
    assert disk["innerError"]["code"] == "DiskLimitExceeded"
    assert "limit of 256 MiB (AMLEMU_JOB_DISK_LIMIT_GB) with 300 MiB written" in disk["message"]
    assert "limit of 32 GiB" in limits.failure(Breach("disk", 32 * 2**30, 33 * 2**30).to_report(), "")["message"]
