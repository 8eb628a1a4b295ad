"""A job container on the real engine: its log lands in the job's file, and its end is told truly."""

import shlex
import uuid
from pathlib import Path

import pytest

from emulator.dispatch import job_container
from emulator.runtime.base import ContainerSpec
from emulator.workers import job_runner
from tests import abusive_jobs
from tests.integration.conftest import NODE_IMAGE

pytestmark = pytest.mark.docker
IMAGE = NODE_IMAGE
HOST_CGROUPS = Path("/sys/fs/cgroup")  # the tests run on the engine's host
EXIT = "/mnt/wd/exit"


def _start(runtime, tmp_path: Path, command: str, stack: str, memory_bytes: int | None = None,
           pids_limit: int | None = None):
    """A container as a node starts one: output into the mounted log, exit status into the mounted dir."""
    (tmp_path / "wd").mkdir(mode=0o777)
    log = tmp_path / "user_logs" / "std_log.txt"
    log.parent.mkdir()
    log.touch(mode=0o666)
    spec = ContainerSpec(name=f"amlemu-{stack}-job-{uuid.uuid4().hex[:8]}", image=IMAGE,
                         entrypoint=["/bin/sh", "-c"], command=[f"{job_container.capture(EXIT)}; {command}"],
                         labels={"amlemu.stack": stack, "amlemu.role": "job"}, memory_bytes=memory_bytes, cpus=0.5,
                         mounts={str(tmp_path / "wd"): "/mnt/wd", str(log): job_container.LOG}, pids_limit=pids_limit,
                         drop_capabilities=True)
    return runtime.run(spec), log, tmp_path / "wd" / "exit"


def test_output_goes_to_the_log_and_success_is_reported(runtime, stack, tmp_path):
    ended = []

    def on_ended(outcome):  # told before the container goes, so the next job need not wait for its removal
        ended.append((outcome, len(runtime.list({"amlemu.stack": stack, "amlemu.role": "job"}))))

    container, log, exit_file = _start(runtime, tmp_path, "echo hello; echo oops >&2; echo done", stack)
    outcome = job_runner.run(runtime, container, log, exit_file, on_ended)
    assert outcome.succeeded and outcome.exit_code == 0
    assert ended == [(outcome, 1)]
    # One file, written in order: stderr lands between the lines around it.
    assert log.read_text().splitlines() == ["hello", "oops", "done"]
    assert outcome.log_tail.splitlines() == ["hello", "oops", "done"]
    assert not runtime.list({"amlemu.stack": stack, "amlemu.role": "job"})  # removed after


def test_a_failing_command_gives_its_exit_code_and_log_tail(runtime, stack, tmp_path):
    container, log, exit_file = _start(runtime, tmp_path, "for i in $(seq 1 50); do echo line $i; done; exit 3",
                                       stack)
    outcome = job_runner.run(runtime, container, log, exit_file)
    assert (outcome.exit_code, outcome.succeeded) == (3, False)
    assert exit_file.read_text().splitlines() == ["3", "refused 0"]  # the shell said it, before the engine could
    tail = outcome.log_tail.splitlines()
    assert len(tail) == job_container.LOG_TAIL_LINES and tail[-1] == "line 50"


def test_a_shell_killed_outright_is_told_by_the_engine(runtime, stack, tmp_path):
    container, log, exit_file = _start(runtime, tmp_path, "echo started; kill -9 $$", stack)
    outcome = job_runner.run(runtime, container, log, exit_file)
    assert outcome.exit_code == 137 and not outcome.oom_killed  # no memory limit: not the kernel's doing
    assert not exit_file.exists()
    assert outcome.log_tail == "started"


def test_running_out_of_memory_is_reported(runtime, stack, tmp_path):
    hog = "python3 -c \"b = bytearray(512 * 1024 * 1024); print('survived')\""
    container, log, exit_file = _start(runtime, tmp_path, hog, stack, memory_bytes=64 * 1024 * 1024)
    outcome = job_runner.run(runtime, container, log, exit_file, memory_limited=True)
    assert outcome.oom_killed and not outcome.succeeded
    assert "survived" not in log.read_text()


FORK_BOMB = f"python3 -c {shlex.quote(abusive_jobs.FORK_BOMB)}"


@pytest.mark.parametrize("cgroups", [None, HOST_CGROUPS], ids=["process-count", "refused-forks"])
def test_a_fork_bomb_held_at_its_pids_limit_is_stopped_and_named(runtime, stack, tmp_path, cgroups):
    container, log, exit_file = _start(runtime, tmp_path, FORK_BOMB, stack, memory_bytes=256 * 2**20, pids_limit=64)
    limits = job_runner.Limits(pids=64, pids_sustain_seconds=2.0, cgroup_root=cgroups)
    outcome = job_runner.run(runtime, container, log, exit_file, memory_limited=True, limits=limits)
    assert outcome.limit is not None and outcome.limit["kind"] == "pids" and outcome.limit["limit"] == 64, outcome
    assert outcome.limit["used"] >= (62 if cgroups is None else 1)  # its count swings as refused children exit
    assert not outcome.oom_killed and not outcome.succeeded  # not taken for an OOM
    assert "bombing" in outcome.log_tail
    assert not runtime.list({"amlemu.stack": stack, "amlemu.role": "job"})


def test_a_shell_that_fails_when_refused_a_fork_is_told_by_its_limit(runtime, stack, tmp_path):
    """It ends by itself (sh exits 2, "Cannot fork") before the watch would stop it: the limit is still named."""
    script = "echo forking; for i in $(seq 200); do sleep 30 & done"
    container, log, exit_file = _start(runtime, tmp_path, script, stack, pids_limit=64)
    limits = job_runner.Limits(pids=64, pids_sustain_seconds=30.0, cgroup_root=HOST_CGROUPS)
    outcome = job_runner.run(runtime, container, log, exit_file, limits=limits)
    assert outcome.exit_code != 0 and outcome.limit is not None, outcome
    assert outcome.limit["kind"] == "pids" and outcome.limit["stopped"] is False, outcome
    assert "Cannot fork" in outcome.log_tail


FILLER = f"python3 -c {shlex.quote(abusive_jobs.filler('/mnt/wd/fill'))}"


def test_a_job_filling_its_disk_is_stopped_at_its_limit_and_named(runtime, stack, tmp_path):
    container, log, exit_file = _start(runtime, tmp_path, FILLER, stack)
    limits = job_runner.Limits(disk_bytes=8 * 2**20, disk_check_seconds=0.5, data_dir=tmp_path, written=("wd",))
    outcome = job_runner.run(runtime, container, log, exit_file, limits=limits)
    assert outcome.limit is not None and outcome.limit["kind"] == "disk", outcome
    assert outcome.limit["used"] > 8 * 2**20 and not outcome.succeeded
    assert (tmp_path / "wd" / "fill").stat().st_size < 100 * 2**20  # stopped soon after, not at its own end


def test_what_a_job_writes_into_its_containers_own_files_counts_too(runtime, stack, tmp_path):
    into_tmp = f"python3 -c {shlex.quote(abusive_jobs.filler('/tmp/fill'))}"
    container, log, exit_file = _start(runtime, tmp_path, into_tmp, stack)
    assert container.layer and Path(container.layer).is_dir()  # here, on the engine's host, as root
    limits = job_runner.Limits(disk_bytes=8 * 2**20, disk_check_seconds=0.5, data_dir=tmp_path, written=("wd",),
                               layer=Path(container.layer))
    outcome = job_runner.run(runtime, container, log, exit_file, limits=limits)
    assert outcome.limit is not None and outcome.limit["kind"] == "disk", outcome


THREAD_POOL = ("import threading, time\nthreads = []\ntry:\n    while True:\n"
               "        t = threading.Thread(target=time.sleep, args=(4,)); t.start(); threads.append(t)\n"
               "except RuntimeError:\n    print('refused at', len(threads), flush=True)\n"
               "for t in threads:\n    t.join()\n")


def test_a_pool_of_threads_refused_once_works_on_at_its_limit(runtime, stack, tmp_path):
    """At the limit for seconds, but refused one thread and then quiet: not a fork bomb (its refused forks stop)."""
    container, log, exit_file = _start(runtime, tmp_path, f"python3 -c {shlex.quote(THREAD_POOL)}", stack,
                                       pids_limit=64)
    limits = job_runner.Limits(pids=64, pids_sustain_seconds=1.0, cgroup_root=HOST_CGROUPS)
    outcome = job_runner.run(runtime, container, log, exit_file, limits=limits)
    assert outcome.succeeded and outcome.limit is None, outcome
    assert "refused at" in outcome.log_tail


def test_a_job_within_its_limits_is_left_to_finish(runtime, stack, tmp_path):
    container, log, exit_file = _start(runtime, tmp_path, "head -c 1048576 /dev/zero > /mnt/wd/small; sleep 3",
                                       stack, pids_limit=64)
    limits = job_runner.Limits(pids=64, pids_sustain_seconds=1.0, disk_bytes=8 * 2**20, disk_check_seconds=0.5,
                               data_dir=tmp_path, written=("wd",))
    outcome = job_runner.run(runtime, container, log, exit_file, limits=limits)
    assert outcome.succeeded and outcome.limit is None


def test_the_tail_is_read_from_the_end_of_a_large_log(tmp_path):
    log = tmp_path / "std_log.txt"
    log.write_text("".join(f"line {i}\n" for i in range(100_000)))
    assert job_container.tail(log, lines=2) == "line 99998\nline 99999"
    assert job_container.tail(tmp_path / "missing.txt") == ""
