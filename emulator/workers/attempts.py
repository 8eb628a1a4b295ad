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
from dataclasses import dataclass, replace
from pathlib import Path

import redis

from emulator import confined
from emulator.errors import EmulatorError
from emulator.runtime.base import ContainerSpec, Observed, Runtime
from emulator.workers import job_runner, protocol
from emulator.workers.protocol import Attempt
from emulator.runtime import labels

log = logging.getLogger("amlemu.node")
WORKDIR = "/mnt/azureml/wd"  # the rank's working directory in its container
GATE = ".amlemu-start"  # in the rank's working directory, while its container waits for a node
EXIT = ".amlemu-exit"  # in the rank's working directory: the command's exit status, once it has one
MOUNT_MISMATCH = 97  # the exit status of a job stopped at its gate because a mount is not what was laid out


def _lay_out(attempt: Attempt, data_dir: Path) -> None:
    """Make the rank's folders and its working directory (a copy of the code snapshot), following no link a
    job may have planted in the workspace's storage."""
    for rel in attempt.make_dirs:
        confined.make_dir(data_dir, rel)  # job code runs unprivileged: it writes where Azure lets it write
    for mount in attempt.mounts:
        # A link anywhere on a mount's way is refused: the engine would follow it on the host.
        if not confined.source(data_dir, mount.source).exists():  # else the engine would mount an empty dir
            raise FileNotFoundError(f"The input for {mount.target} is not in the workspace's storage "
                                    f"(looked for {mount.source}).")
    workdir = data_dir / attempt.workdir
    shutil.rmtree(workdir, ignore_errors=True)  # a rerun of the same attempt starts from the snapshot again
    reader = int(attempt.user.split(":")[0]) if attempt.user and attempt.user.split(":")[0].isdigit() else None
    skipped = confined.copy_tree(data_dir, attempt.code_dir, workdir, reader) if attempt.code_dir else []
    if not attempt.code_dir:
        confined.make_dir(data_dir, attempt.workdir)
    notes = [*attempt.notes, *(f"amlemu: left out of the code snapshot: {s}" for s in skipped[:20])]
    with confined.appending(data_dir, attempt.log_file) as out:  # the job's own output goes straight into it
        out.writelines(f"{note}\n" for note in notes)


# User code runs unprivileged (a non-root user, no capabilities, no new privileges) and with a bound on its
# processes: a fork bomb in a job stops at its own container instead of taking the host's PIDs. Azure's VMs set no
# such bound, so it is generous: far more than a data loader's workers or an MPI rank's threads need.
JOB_PIDS_LIMIT = 4096


@dataclass(frozen=True)
class NodeIdentity:
    node_id: str
    imds_endpoint: str | None = None  # where this node's Scheduled Events are served to its jobs

    def job_env(self) -> dict[str, str]:
        """What a job learns of the node it runs on, handed over at the gate."""
        return {"AZUREML_EMU_IMDS_ENDPOINT": self.imds_endpoint} if self.imds_endpoint else {}


def container_spec(attempt: Attempt, host_data_dir: Path) -> ContainerSpec:
    """The rank's container. It waits at its gate (a FIFO in its working directory) until a node takes the
    job, reads there what it needs of that node, and only then runs the command: so it can be started ahead,
    while every node is still busy, and the job begins on a node the moment one is free."""
    mounts = {str(host_data_dir / attempt.workdir): WORKDIR, str(host_data_dir / attempt.log_file): job_runner.LOG}
    mounts.update({str(host_data_dir / m.source): m.target for m in attempt.mounts})
    # A SIGTERM (its node being taken by a preemption) is for the user's code: tini, the container's init, passes
    # it to the whole process group, and the `sh -c` around the command outlives it (a trap that does nothing;
    # its children still get the default action) so the container lasts as long as the code does.
    env = {**attempt.env, "TINI_KILL_PROCESS_GROUP": "1"}
    # The node unlinks the gate once it is open.
    command = f"{job_runner.capture(f'{WORKDIR}/{EXIT}')}; trap : TERM; . ./{GATE}; {attempt.command}"
    return ContainerSpec(name=attempt.container_name, image=attempt.image, command=[command],
                         entrypoint=["/bin/sh", "-c"], labels=attempt.labels, env=env, cpus=attempt.cpus,
                         memory_bytes=attempt.memory_bytes, gpus=attempt.gpus, network=attempt.network,
                         mounts=mounts, read_only=tuple(m.target for m in attempt.mounts if m.read_only),
                         user=attempt.user, working_dir=WORKDIR, drop_capabilities=True, pids_limit=JOB_PIDS_LIMIT)


def stage(attempt: Attempt, runtime: Runtime, broker: redis.Redis, data_dir: Path, host_data_dir: Path) -> Observed:
    """Lay out the rank's directories and start its container, waiting at its gate: in a network sandbox of
    its cluster's pool when one is free, else on the jobs network with a namespace of its own."""
    _lay_out(attempt, data_dir)
    gate = data_dir / attempt.workdir / GATE
    os.mkfifo(gate)
    gate.chmod(0o666)  # the job runs as an unprivileged user, who reads it
    spec = container_spec(attempt, host_data_dir)
    sandbox = protocol.take_sandbox(broker, attempt.sandbox_pool) if attempt.sandbox_pool else None
    if sandbox:
        try:
            return runtime.run(replace(spec, network_of=sandbox, labels={**spec.labels, labels.SANDBOX: sandbox}))
        except EmulatorError as exc:  # the sandbox is gone (killed from outside): a namespace of its own
            log.warning("%s: network sandbox %s unusable (%s)", attempt.container_name, sandbox, exc.message)
            runtime.remove(spec.name)
        finally:
            protocol.settle_sandbox_lease(broker, sandbox)
    return runtime.run(spec)


def _open_for_writing(fifo: Path) -> int | None:
    """A descriptor once a reader has the FIFO open, else None (ENXIO)."""
    try:
        return os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
    except OSError as exc:
        if exc.errno == errno.ENXIO:
            return None
        raise


def mount_checks(attempt: Attempt, data_dir: Path) -> str:
    """Shell lines, run at the gate before the command, that stop the job unless each of its mounts is the very
    folder or file laid out for it. The engine resolves a mount's source when the container starts: a job writing
    into a folder that another job mounts could swap it for a link in between, and the engine would follow that
    link on the host. A mount shows the device and inode of what was mounted, which no swap can fake."""
    mounts = {attempt.workdir: WORKDIR, attempt.log_file: job_runner.LOG, **{m.source: m.target for m in attempt.mounts}}
    lines = []
    for source, target in mounts.items():
        expected, where = confined.identity(data_dir, source), shlex.quote(target)
        lines.append(f'[ "$(stat -c %d:%i -- {where})" = {expected} ] || {{ echo "amlemu: {target} is not what was '
                     f'laid out for it (a link swapped in?); the job stops." >&2; exit {MOUNT_MISMATCH}; }}\n')
    return "".join(lines)


def open_gate(runtime: Runtime, container: Observed, gate: Path, env: dict[str, str], checks: str = "",
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


def _container_for(attempt: Attempt, runtime: Runtime, broker: redis.Redis, data_dir: Path,
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

        def ended(outcome: job_runner.Outcome) -> None:
            protocol.report(broker, "ended", attempt, node_id, exit_code=outcome.exit_code,
                            oom=outcome.oom_killed, tail=outcome.log_tail, error=None)

        job_runner.run(runtime, container, data_dir / attempt.log_file, data_dir / attempt.workdir / EXIT, ended,
                       later, memory_limited=attempt.memory_bytes is not None, discard=discard)
        return "ended"
    except Exception as exc:  # the job fails with the reason; the node stays up for the next one
        log.exception("attempt %s of %s failed to run", attempt.attempt, attempt.job_name)
        protocol.report(broker, "ended", attempt, node_id, exit_code=None, oom=False, tail="",
                        error=getattr(exc, "message", None) or str(exc))
        return "error"
    finally:
        later(shutil.rmtree, data_dir / attempt.workdir, True)
