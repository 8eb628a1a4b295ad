"""A job container on the real engine: its log lands in the job's file, and its end is told truly."""

import uuid

import pytest

from emulator.runtime.base import ContainerSpec
from emulator.workers import job_runner
from tests.integration.conftest import NODE_IMAGE

pytestmark = pytest.mark.docker
IMAGE = NODE_IMAGE


def _spec(command: str, stack: str, memory_bytes: int | None = None) -> ContainerSpec:
    return ContainerSpec(name=f"amlemu-{stack}-job-{uuid.uuid4().hex[:8]}", image=IMAGE, entrypoint=["/bin/sh", "-c"],
                         command=[command], labels={"amlemu.stack": stack, "amlemu.role": "job"},
                         memory_bytes=memory_bytes, cpus=0.5)


def test_output_goes_to_the_log_and_success_is_reported(runtime, stack, tmp_path):
    ended = []
    log = tmp_path / "user_logs" / "std_log.txt"

    def on_ended(outcome):  # told before the container goes, so the next job need not wait for its removal
        ended.append((outcome, len(runtime.list({"amlemu.stack": stack, "amlemu.role": "job"}))))

    outcome = job_runner.run(runtime, runtime.run(_spec("echo hello; echo oops >&2; echo done", stack)), log,
                             on_ended)
    assert outcome.succeeded and outcome.exit_code == 0
    assert ended == [(outcome, 1)]
    # The engine keeps stdout and stderr apart, so lines written at once may swap across the two streams.
    assert sorted(log.read_text().splitlines()) == ["done", "hello", "oops"]
    assert sorted(outcome.log_tail.splitlines()) == ["done", "hello", "oops"]
    assert not runtime.list({"amlemu.stack": stack, "amlemu.role": "job"})  # removed after


def test_a_failing_command_gives_its_exit_code_and_log_tail(runtime, stack, tmp_path):
    command = "for i in $(seq 1 50); do echo line $i; done; exit 3"
    outcome = job_runner.run(runtime, runtime.run(_spec(command, stack)), tmp_path / "std_log.txt")
    assert (outcome.exit_code, outcome.succeeded) == (3, False)
    tail = outcome.log_tail.splitlines()
    assert len(tail) == job_runner.LOG_TAIL_LINES and tail[-1] == "line 50"


def test_running_out_of_memory_is_reported(runtime, stack, tmp_path):
    hog = "python3 -c \"b = bytearray(512 * 1024 * 1024); print('survived')\""
    outcome = job_runner.run(runtime, runtime.run(_spec(hog, stack, memory_bytes=64 * 1024 * 1024)),
                             tmp_path / "std_log.txt", memory_limited=True)
    assert outcome.oom_killed and not outcome.succeeded
    assert "survived" not in (tmp_path / "std_log.txt").read_text()
