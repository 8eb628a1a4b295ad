"""What a node does with one dispatched rank: claim it, lay out its directories, run its container, report.

The node sees the emulator's data directory at `data_dir` and mounts it into job containers through its
host path (`host_data_dir`), since job containers are the engine's siblings, not the node's children.
"""

import logging
import os
import shutil
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import redis

from emulator.runtime.base import ContainerSpec, Observed, Runtime
from emulator.workers import job_runner, protocol
from emulator.workers.protocol import Attempt

log = logging.getLogger("amlemu.node")


def _open_up(path: Path) -> None:
    """Job code runs as an unprivileged user: it must be able to write where Azure lets it write."""
    for root, _dirs, files in os.walk(path):
        os.chmod(root, 0o777)
        for name in files:
            os.chmod(os.path.join(root, name), 0o666 | (os.stat(os.path.join(root, name)).st_mode & 0o111))


def _lay_out(attempt: Attempt, data_dir: Path) -> None:
    for mount in attempt.mounts:
        if mount.read_only and not (data_dir / mount.source).exists():  # else the engine would mount an empty dir
            raise FileNotFoundError(f"The input for {mount.target} is not in the workspace's storage "
                                    f"(looked for {mount.source}).")
    for rel in attempt.make_dirs:
        path = data_dir / rel
        path.mkdir(parents=True, exist_ok=True)
        path.chmod(0o777)
    workdir = data_dir / attempt.workdir
    shutil.rmtree(workdir, ignore_errors=True)  # a rerun of the same attempt starts from the snapshot again
    if attempt.code_dir:
        shutil.copytree(data_dir / attempt.code_dir, workdir, symlinks=True)
    workdir.mkdir(parents=True, exist_ok=True)
    _open_up(workdir)
    log_file = data_dir / attempt.log_file
    log_file.parent.mkdir(parents=True, exist_ok=True)
    with log_file.open("a") as out:
        out.writelines(f"{note}\n" for note in attempt.notes)


@dataclass(frozen=True)
class NodeIdentity:
    node_id: str
    imds_endpoint: str | None = None  # where this node's Scheduled Events are served to its jobs


def container_spec(attempt: Attempt, host_data_dir: Path, node: NodeIdentity) -> ContainerSpec:
    mounts = {str(host_data_dir / attempt.workdir): "/mnt/azureml/wd"}
    mounts.update({str(host_data_dir / m.source): m.target for m in attempt.mounts})
    # A SIGTERM (a preemption notice) is for the user's code: tini, the container's init, passes it to the
    # whole process group, and the `sh -c` around the command outlives it (a trap that does nothing; its
    # children still get the default action) so the container lasts as long as the code does.
    env = {**attempt.env, "TINI_KILL_PROCESS_GROUP": "1",
           **({"AZUREML_EMU_IMDS_ENDPOINT": node.imds_endpoint} if node.imds_endpoint else {})}
    return ContainerSpec(name=attempt.container_name, image=attempt.image, command=[f"trap : TERM; {attempt.command}"],
                         entrypoint=["/bin/sh", "-c"], labels={**attempt.labels, "amlemu.node": node.node_id},
                         env=env, cpus=attempt.cpus,
                         memory_bytes=attempt.memory_bytes, gpus=attempt.gpus, network=attempt.network,
                         mounts=mounts, read_only=tuple(m.target for m in attempt.mounts if m.read_only),
                         user=attempt.user, working_dir="/mnt/azureml/wd")


def _wait_out_notice(broker: redis.Redis, node_id: str, limit_seconds: float = 600.0) -> None:
    """Block this worker while the notice stands (the controller kills the node at its end)."""
    deadline = time.monotonic() + limit_seconds
    while protocol.read_notice(broker, node_id) is not None and time.monotonic() < deadline:
        threading.Event().wait(0.5)


def execute(message: dict, runtime: Runtime, broker: redis.Redis, node: "NodeIdentity", data_dir: Path,
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
        _lay_out(attempt, data_dir)
        if not protocol.is_current(broker, attempt.job_key, attempt.attempt):  # cancelled while we set up
            protocol.report(broker, "ended", attempt, node_id, exit_code=None, oom=False, tail="", error=None)
            return "cancelled"

        def started(container: Observed) -> None:
            protocol.report(broker, "running", attempt, node_id, container=container.id)

        def ended(outcome: job_runner.Outcome) -> None:
            protocol.report(broker, "ended", attempt, node_id, exit_code=outcome.exit_code,
                            oom=outcome.oom_killed, tail=outcome.log_tail, error=None)

        job_runner.run(runtime, container_spec(attempt, host_data_dir, node), data_dir / attempt.log_file, started,
                       ended, later)
        return "ended"
    except Exception as exc:  # the job fails with the reason; the node stays up for the next one
        log.exception("attempt %s of %s failed to run", attempt.attempt, attempt.job_name)
        protocol.report(broker, "ended", attempt, node_id, exit_code=None, oom=False, tail="",
                        error=getattr(exc, "message", None) or str(exc))
        return "error"
    finally:
        later(shutil.rmtree, data_dir / attempt.workdir, True)
