"""When a job has gone past its processes or disk bound, decided from samples and the clock alone."""

import pytest

from emulator.domain.jobs import limits
from emulator.domain.jobs.limits import Breach, PidsWatch


def _feed(samples: list[tuple], limit: int = 100, sustain: float = 5.0) -> list[Breach | None]:
    """Samples (now, processes) or (now, processes, refused forks so far)."""
    watch, verdicts = PidsWatch(), []
    for now, current, *refused in samples:
        watch, breach = limits.watch_pids(watch, current, refused[0] if refused else None, limit, now, sustain)
        verdicts.append(breach)
    return verdicts


def test_a_fork_bomb_is_seen_by_its_refused_forks_growing_while_its_count_swings_far_below_the_limit():
    # measured on this machine: a shell fork bomb under --pids-limit 512, sampled each second
    bomb = [(0, 482, 0), (1, 500, 1122), (2, 220, 1774), (3, 430, 2460), (4, 475, 3170), (5, 470, 3845),
            (6, 512, 4471)]
    verdicts = _feed(bomb, limit=512)
    assert verdicts[:6] == [None] * 6  # pressing since t=1
    assert verdicts[6] == Breach("pids", 512, 512)


def test_a_pool_of_threads_refused_once_works_on_at_its_limit():
    # measured: Python threads started until one is refused (RuntimeError), then kept: one refusal, 64 of 64
    assert _feed([(0, 2, 0), (1, 64, 1), (2, 64, 1), (4, 64, 1), (8, 64, 1), (12, 64, 1)], limit=64) == [None] * 6
    assert _feed([(0, 64, 1), (3, 64, 1), (3.5, None, None), (9, 64, 1)], limit=64) == [None] * 4


def test_without_refusals_a_job_that_stays_at_its_pids_limit_is_stopped_once_the_time_has_passed():
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
    assert pids["message"].endswith("\ntail line") and "was stopped" in pids["message"]
    ended = limits.failure(Breach("pids", 64, 64, stopped=False).to_report(), "sh: 1: Cannot fork")
    assert ended["innerError"]["code"] == "ProcessLimitExceeded" and "failed when its forks were refused" in \
        ended["message"]
    disk = limits.failure(Breach("disk", 2**30 // 4, 300 * 2**20).to_report(), "")
    assert disk["innerError"]["code"] == "DiskLimitExceeded"
    assert "limit of 256 MiB (AMLEMU_JOB_DISK_LIMIT_GB) with 300 MiB written" in disk["message"]
    assert "limit of 32 GiB" in limits.failure(Breach("disk", 32 * 2**30, 33 * 2**30).to_report(), "")["message"]
