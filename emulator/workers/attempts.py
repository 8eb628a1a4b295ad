"""What a node does with one dispatched rank: claim it, lay out its directories, run its container, report.

The node sees the emulator's data directory at `data_dir` and mounts it into job containers through its
host path (`host_data_dir`), since job containers are the engine's siblings, not the node's children.
"""

import logging
import os
import shutil
from collections.abc import Callable
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


def container_spec(attempt: Attempt, host_data_dir: Path) -> ContainerSpec:
    mounts = {str(host_data_dir / attempt.workdir): "/mnt/azureml/wd"}
    mounts.update({str(host_data_dir / m.source): m.target for m in attempt.mounts})
    return ContainerSpec(name=attempt.container_name, image=attempt.image, command=[attempt.command],
                         entrypoint=["/bin/sh", "-c"], labels=attempt.labels, env=attempt.env, cpus=attempt.cpus,
                         memory_bytes=attempt.memory_bytes, gpus=attempt.gpus, network=attempt.network,
                         mounts=mounts, read_only=tuple(m.target for m in attempt.mounts if m.read_only),
                         user=attempt.user, working_dir="/mnt/azureml/wd")


def execute(message: dict, runtime: Runtime, broker: redis.Redis, node_id: str, data_dir: Path,
            host_data_dir: Path, later: Callable[..., object] = lambda fn, *args: fn(*args)) -> str:
    """Run one rank to its end. A stale or duplicate delivery does nothing (it is acked all the same).

    `later` runs the clean-up after the end is reported (the node hands it to a thread, so the next job
    starts at once)."""
    attempt = Attempt.from_message(message)
    if not protocol.claim(broker, attempt, node_id):
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

        job_runner.run(runtime, container_spec(attempt, host_data_dir), data_dir / attempt.log_file, started, ended,
                       later)
        return "ended"
    except Exception as exc:  # the job fails with the reason; the node stays up for the next one
        log.exception("attempt %s of %s failed to run", attempt.attempt, attempt.job_name)
        protocol.report(broker, "ended", attempt, node_id, exit_code=None, oom=False, tail="",
                        error=getattr(exc, "message", None) or str(exc))
        return "error"
    finally:
        later(shutil.rmtree, data_dir / attempt.workdir, True)
