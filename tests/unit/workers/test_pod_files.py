"""A job's pod's follower (workers/pod_files.py): once the job's shell has written its exit status it sends the
rest of the rank's files, tried again while the api does not answer (restarting), within a bound; a stale attempt's
are not tried again."""

import threading

import httpx
import pytest

from emulator.dispatch import job_container
from emulator.dispatch.protocol import Attempt
from emulator.workers import file_sync, pod_files


def _attempt() -> Attempt:
    return Attempt(job_key="k", job_name="j", attempt=1, rank=0, world_size=1, image="i", command="c", env={},
                   labels={}, container_name="n", cpus=None, memory_bytes=None, gpus=0, network=None, user=None,
                   workdir="jobs/t/1/0/wd", code_dir=None, log_file="blobs/a/dcid.j/user_logs/std_log.txt")


class FlakyApi:
    """A FileSync whose api refuses the first `failures` final sends (the log's), then takes them."""

    def __init__(self, failures: int, error: Exception):
        self.fetched: dict = {}
        self.failures, self.error, self.sent = failures, error, 0
        self.lock = threading.Lock()

    def send_log(self, _attempt, held: int) -> int:
        with self.lock:
            if self.failures:
                self.failures -= 1
                raise self.error
            self.sent += 1
            return held

    def send_changed(self, _attempt, sent: dict) -> dict:
        return sent


@pytest.fixture
def ended(tmp_path):
    """The rank's exit status, as its shell writes it at its end."""
    exit_file = tmp_path / _attempt().workdir / job_container.EXIT
    exit_file.parent.mkdir(parents=True)
    exit_file.write_text("0\n")
    return tmp_path


def test_the_last_files_are_sent_once_the_api_answers_again(ended, monkeypatch):
    monkeypatch.setattr(pod_files, "RETRY_SECONDS", 0.01)
    api = FlakyApi(3, httpx.ConnectError("refused"))
    pod_files.follow(_attempt(), api, ended)
    assert api.sent >= 1 and api.failures == 0


def test_an_api_that_stays_away_fails_the_follower_past_the_bound(ended, monkeypatch):
    monkeypatch.setattr(pod_files, "RETRY_SECONDS", 0.01)
    now = iter(range(0, 10_000, 20))  # each look at the clock is 20 s on
    with pytest.raises(httpx.ConnectError):
        pod_files.follow(_attempt(), FlakyApi(10_000, httpx.ConnectError("refused")), ended,
                         clock=lambda: float(next(now)))


def test_a_stale_attempts_files_are_not_tried_again(ended):
    api = FlakyApi(1, file_sync.Stale("not current"))
    with pytest.raises(file_sync.Stale):
        pod_files.follow(_attempt(), api, ended)
    assert api.sent == 0
