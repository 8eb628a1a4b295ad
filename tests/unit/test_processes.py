"""The api serves only once the controller has reconciled since the api started (compose starts them at once)."""

import os
import threading
import time

from emulator import processes
from emulator.settings import Settings


def test_the_api_waits_for_a_reconcile_pass_made_after_its_start(tmp_path):
    settings = Settings(data_dir=tmp_path, controller_wait_seconds=10)
    settings.controller_alive.touch()
    os.utime(settings.controller_alive, (time.time() - 5, time.time() - 5))  # a pass of an earlier run
    passed = threading.Timer(0.3, settings.controller_alive.touch)
    passed.start()
    started = time.monotonic()
    processes._await_reconcile_pass(settings)
    assert 0.25 <= time.monotonic() - started < 5
    passed.join()


def test_without_a_controller_the_api_serves_after_the_limit_and_says_so(tmp_path, caplog):
    started = time.monotonic()
    processes._await_reconcile_pass(Settings(data_dir=tmp_path, controller_wait_seconds=0.2))
    assert time.monotonic() - started >= 0.2
    assert "has not reconciled within 0.2 s" in caplog.text


def test_an_api_run_on_its_own_serves_at_once(tmp_path, caplog):
    started = time.monotonic()
    processes._await_reconcile_pass(Settings(data_dir=tmp_path, controller_wait_seconds=0))
    assert time.monotonic() - started < 0.1 and not caplog.text
