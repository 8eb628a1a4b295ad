"""What a node does with one dispatched rank: claim it, take the container started ahead for it or start one
(its directories laid out), open the container's gate, follow it to its end, report.

The node sees the emulator's data directory at `data_dir` and mounts it into job containers through its
host path (`host_data_dir`), since job containers are the engine's siblings, not the node's children.
"""

import errno
import logging
import os
import shlex
import shutil
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import redis

from emulator.dispatch import job_container, protocol
from emulator.dispatch.job_container import EXIT, GATE, mount_checks, stage
from emulator.dispatch.protocol import Attempt
from emulator.runtime import labels
from emulator.runtime.base import Containers, Observed
from emulator.workers import file_sync, job_runner

log = logging.getLogger("amlemu.node")


@dataclass(frozen=True)
class NodeIdentity:
    node_id: str
    imds_endpoint: str | None = None  # where this node's Scheduled Events are served to its jobs
    docker_root: str | None = None  # the engine's data root on its host (seen at job_container.ENGINE_ROOT)
    cgroup_root: Path | None = None  # the host's cgroups, where this node sees them (job_container.CGROUP_ROOT)
    files: file_sync.FileSync | None = None  # a detached node's way to the emulator's files (None: it shares them)

    def job_env(self) -> dict[str, str]:
        """What a job learns of the node it runs on, handed over at the gate."""
        return {"AZUREML_EMU_IMDS_ENDPOINT": self.imds_endpoint} if self.imds_endpoint else {}


def _open_for_writing(fifo: Path) -> int | None:
    """A descriptor once a reader has the FIFO open, else None (ENXIO)."""
    try:
        return os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
    except OSError as exc:
        if exc.errno == errno.ENXIO:
            return None
        raise


def open_gate(runtime: Containers, container: Observed, gate: Path, env: dict[str, str], checks: str = "",
              limit_seconds: float = 120.0) -> None:
    """Let the container's command run, with `env` exported, once `checks` (shell lines) pass. Returns at once if
    the container ended without reaching its gate (no shell in the image, say): its exit code and log say why."""
    lines = (checks + "".join(f"export {name}={shlex.quote(value)}\n" for name, value in env.items())).encode()
    deadline = time.monotonic() + limit_seconds
    polls = 0
    while (fd := _open_for_writing(gate)) is None:  # the container is still starting
        polls += 1
        if polls % 50 == 0 and not getattr(runtime.find(container.id), "running", False):
            return
        if time.monotonic() > deadline:
            raise TimeoutError(f"the job's container did not come to its start within {limit_seconds:g} s")
        threading.Event().wait(0.005)
    try:
        os.write(fd, lines)
        gate.unlink()  # the container reads what was written through the descriptor it holds
    finally:
        os.close(fd)


def _container_for(attempt: Attempt, runtime: Containers, broker: redis.Redis, data_dir: Path,
                   host_data_dir: Path) -> Observed:
    """The claimed rank's container: the one the controller started ahead for it, or a new one."""
    if protocol.take_stage(broker, attempt):
        return stage(attempt, runtime, broker, data_dir, host_data_dir)
    deadline = time.monotonic() + protocol.STAGING_TTL
    while (state := protocol.stage_state(broker, attempt)) == protocol.STAGING and time.monotonic() < deadline:
        threading.Event().wait(0.01)  # the controller is starting it right now
    if state == protocol.STAGED and (staged := runtime.find(attempt.container_name)) is not None and staged.running:
        return staged
    runtime.remove(attempt.container_name)  # what is left of a staging that failed
    return stage(attempt, runtime, broker, data_dir, host_data_dir)


def _limits(attempt: Attempt, data_dir: Path, layer: Path | None, cgroup_root: Path | None) -> job_runner.Limits:
    return job_runner.Limits(pids=attempt.pids_limit, pids_sustain_seconds=attempt.pids_sustain_seconds,
                             disk_bytes=attempt.disk_limit_bytes, disk_check_seconds=attempt.disk_check_seconds,
                             data_dir=data_dir, written=job_container.written(attempt), layer=layer,
                             cgroup_root=cgroup_root)


def _wait_out_notice(broker: redis.Redis, node_id: str, limit_seconds: float = 600.0) -> None:
    """Block this worker while the notice stands (the controller kills the node at its end)."""
    deadline = time.monotonic() + limit_seconds
    while protocol.read_notice(broker, node_id) is not None and time.monotonic() < deadline:
        threading.Event().wait(0.5)


def _fetched(files: file_sync.FileSync | None, attempt: Attempt) -> bool:
    """Fetch what a detached node's rank reads; False if its attempt stopped being current meanwhile."""
    try:
        if files is not None:
            files.fetch(attempt)
        return True
    except file_sync.Stale:
        return False


def _send_back(uploads: file_sync.Uploads | None, attempt: Attempt) -> None:
    """A detached node's rank: the rest of its log, then what it wrote; a stale attempt's are refused by the api,
    and dropped."""
    if uploads is None:
        return
    try:
        uploads.stop()
    except file_sync.Stale:
        log.info("%s attempt %s is no longer current: its files are not sent back", attempt.job_name,
                 attempt.attempt)


def execute(message: dict, runtime: Containers, broker: redis.Redis, node: "NodeIdentity", data_dir: Path,
            host_data_dir: Path, hand_back: Callable[[dict], None] = lambda _message: None,
            later: Callable[..., object] = job_runner.at_once) -> str:
    """Run one rank to its end. A stale or duplicate delivery does nothing (it is acked all the same); a
    node under a preemption notice hands the message back to its queue for another node.

    `later` runs the clean-up after the end is reported (the node hands it to a thread, so the next job
    starts at once)."""
    node_id = node.node_id
    attempt = Attempt.from_message(message)
    claimed = protocol.claim(broker, attempt, node_id)
    if claimed == protocol.DRAINING:
        log.info("handing back %s attempt %s rank %s: this node is being preempted", attempt.job_name,
                 attempt.attempt, attempt.rank)
        hand_back(message)
        _wait_out_notice(broker, node_id)  # take nothing more: the node is about to go
        return "draining"
    if claimed == protocol.STALE:
        log.info("ignoring %s attempt %s rank %s: not current or already claimed", attempt.job_name,
                 attempt.attempt, attempt.rank)
        return "stale"
    protocol.report(broker, "claimed", attempt, node_id)
    try:
        if not _fetched(node.files, attempt):
            protocol.report(broker, "ended", attempt, node_id, exit_code=None, oom=False, tail="", error=None)
            return "cancelled"
        container = _container_for(attempt, runtime, broker, data_dir, host_data_dir)

        def discard() -> None:
            runtime.remove(container.id)
            if attempt.sandbox_pool and (sandbox := container.labels.get(labels.SANDBOX)):
                protocol.release_sandbox(broker, attempt.sandbox_pool, sandbox)

        if not protocol.is_current(broker, attempt.job_key, attempt.attempt):  # cancelled while we set up
            later(discard)
            protocol.report(broker, "ended", attempt, node_id, exit_code=None, oom=False, tail="", error=None)
            return "cancelled"
        open_gate(runtime, container, data_dir / attempt.workdir / GATE, node.job_env(), mount_checks(attempt, data_dir))
        protocol.report(broker, "running", attempt, node_id, container=container.id)
        uploads = file_sync.Uploads(node.files, attempt) if node.files is not None else None

        def ended(outcome: job_runner.Outcome) -> None:
            _send_back(uploads, attempt)  # a detached node's log and outputs: in the workspace at the end
            protocol.report(broker, "ended", attempt, node_id, exit_code=outcome.exit_code,
                            oom=outcome.oom_killed, tail=outcome.log_tail, error=None, limit=outcome.limit)

        job_runner.run(runtime, container, data_dir / attempt.log_file, data_dir / attempt.workdir / EXIT, ended,
                       later, memory_limited=attempt.memory_bytes is not None, discard=discard,
                       limits=_limits(attempt, data_dir, job_container.seen_layer(container.layer, node.docker_root),
                                      node.cgroup_root))
        return "ended"
    except Exception as exc:  # the job fails with the reason; the node stays up for the next one
        log.exception("attempt %s of %s failed to run", attempt.attempt, attempt.job_name)
        protocol.report(broker, "ended", attempt, node_id, exit_code=None, oom=False, tail="",
                        error=getattr(exc, "message", None) or str(exc))
        return "error"
    finally:
        later(shutil.rmtree, data_dir / job_container.rank_dir(attempt.workdir), True)  # its copies too
        _forget(node.files, attempt)


def _forget(files: file_sync.FileSync | None, attempt: Attempt) -> None:
    """A detached node's copies of the workspace's files go before its next rank (not later: that rank may be the
    same job's next attempt, fetching the same paths)."""
    try:
        if files is not None:
            files.forget(attempt)
    except OSError as exc:
        log.warning("could not remove the copies of %s's files: %s", attempt.job_name, exc)
