"""Job schedules through the unmodified SDK on a composed stack whose time scale runs a minute in 6 s: a cron
schedule's jobs run to completion, disabling it stops them while another schedule keeps firing, and deleting it
leaves its jobs."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from emulator.cli.stack import ROOT, python_path
from tests.e2e import stacks

pytestmark = pytest.mark.e2e
PROBE = Path(__file__).with_name("schedule_probe.py")


@pytest.fixture(scope="module")
def fast_stack(tmp_path_factory):
    stack = stacks.compose_up(stacks.own_env(tmp_path_factory.mktemp("amlemu-home"), "sched",
                                             AMLEMU_TIME_SCALE="0.1"))
    try:
        assert stack.wait_healthy(timeout=120), stack.compose("logs", capture=True).stdout
        yield stack
    finally:
        stacks.remove(stack)


def test_a_cron_schedule_makes_jobs_that_complete_until_it_is_disabled(fast_stack):
    env = {**os.environ, **fast_stack.env_vars(), "PYTHONPATH": python_path(str(ROOT)),
           "AZURE_ML_CLI_PRIVATE_FEATURES_ENABLED": "true"}
    result = subprocess.run([sys.executable, str(PROBE)], capture_output=True, text=True, env=env, cwd=ROOT,
                            timeout=900)
    assert result.returncode == 0, result.stderr[-4000:] + fast_stack.compose("logs", "controller",
                                                                             capture=True).stdout[-4000:]
    said = [line for line in result.stdout.splitlines() if "{" in line]  # the SDK's pollers print dots too
    assert said, result.stdout[-4000:]
    seen = json.loads(said[-1][said[-1].index("{"):])
    assert seen["created"] == ["every-minute", True, "* * * * *", "Succeeded"]
    assert seen["completed"] >= 2 and seen["disabled"] is False
    assert seen["after_disable"] == []  # the witness fired twice meanwhile: two minutes passed, none of these
    assert seen["witness"][0] == "minute"
    assert seen["listed"] == {"EnabledOnly": ["witness"], "DisabledOnly": ["every-minute"],
                              "All": ["every-minute", "witness"]}
    assert seen["kept_after_delete"] is True
    assert all(status == "Completed" for status in seen["witness_jobs_complete"].values())
    controller_log = fast_stack.compose("logs", "controller", capture=True).stdout
    assert "schedule every-minute: job every-minute-" in controller_log
