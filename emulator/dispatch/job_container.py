"""A job rank's container and its files, as the controller and the node both know them: how its folders are laid
out, what container it runs in (waiting at its gate until a node takes the job), how it is started ahead, and
where its exit status and log are read afterwards. Pure of Celery and of the store.
"""

import logging
import os
import shlex
import shutil
from dataclasses import replace
from pathlib import Path, PurePosixPath

import redis

from emulator import confined
from emulator.dispatch import protocol
from emulator.dispatch.protocol import Attempt
from emulator.errors import EmulatorError
from emulator.runtime import labels
from emulator.runtime.base import Containers, ContainerSpec, Exit, Observed

log = logging.getLogger("amlemu.node")
WORKDIR = "/mnt/azureml/wd"  # the rank's working directory in its container
GATE = ".amlemu-start"  # in the rank's working directory, while its container waits for a node
EXIT = ".amlemu-exit"  # in the rank's working directory: the command's exit status, once it has one
MOUNT_MISMATCH = 97  # the exit status of a job stopped at its gate because a mount is not what was laid out
LOG = "/mnt/azureml/logs/std_log.txt"  # where a job container sees its log file
LOG_TAIL_LINES = 30
ENGINE_ROOT = "/var/lib/amlemu-engine"  # where a node sees the engine's data root (read-only): job containers' layers
CGROUP_ROOT = "/var/lib/amlemu-cgroup"  # where a node sees the host's cgroups (read-only): its jobs' refused forks


def rank_dir(workdir: str) -> str:
    """The rank's own folder: its working directory and its downloaded inputs, removed together at its end."""
    return str(PurePosixPath(workdir).parent)


def downloads_dir(workdir: str) -> str:
    """Where a rank's inputs in download mode are copied: beside its working directory."""
    return f"{rank_dir(workdir)}/downloads"


def lay_out(attempt: Attempt, data_dir: Path) -> None:
    """Make the rank's folders and its working directory (a copy of the code snapshot), following no link a
    job may have planted in the workspace's storage."""
    for rel in attempt.make_dirs:
        confined.make_dir(data_dir, rel)  # job code runs unprivileged: it writes where Azure lets it write
    reader = int(attempt.user.split(":")[0]) if attempt.user and attempt.user.split(":")[0].isdigit() else None
    shutil.rmtree(data_dir / attempt.workdir, ignore_errors=True)  # a rerun of the attempt starts afresh
    shutil.rmtree(data_dir / downloads_dir(attempt.workdir), ignore_errors=True)
    for source, copy in attempt.downloads:  # the job's own copy: what it changes there stays there
        if not confined.source(data_dir, source).exists():
            raise FileNotFoundError(f"The input to download is not in the workspace's storage (looked for {source}).")
        copy_of = confined.copy_tree if confined.source(data_dir, source).is_dir() else confined.copy_file
        copy_of(data_dir, source, confined.source(data_dir, copy), reader)
    for mount in attempt.mounts:
        # A link anywhere on a mount's way is refused: the engine would follow it on the host.
        if not confined.source(data_dir, mount.source).exists():  # else the engine would mount an empty dir
            raise FileNotFoundError(f"The input for {mount.target} is not in the workspace's storage "
                                    f"(looked for {mount.source}).")
    workdir = data_dir / attempt.workdir
    skipped = confined.copy_tree(data_dir, attempt.code_dir, workdir, reader) if attempt.code_dir else []
    if not attempt.code_dir:
        confined.make_dir(data_dir, attempt.workdir)
    notes = [*attempt.notes, *(f"amlemu: left out of the code snapshot: {s}" for s in skipped[:20])]
    with confined.appending(data_dir, attempt.log_file) as out:  # the job's own output goes straight into it
        out.writelines(f"{note}\n" for note in notes)


def written(attempt: Attempt) -> tuple[str, ...]:
    """What the rank may write, relative to the data directory: its folder (working directory and downloaded
    inputs), its log, and its writable mounts (outputs, logs, named outputs). The rest of its container's files
    are the engine's (its writable layer)."""
    mounts = (m.source for m in attempt.mounts if not m.read_only)
    return tuple(dict.fromkeys([rank_dir(attempt.workdir), attempt.log_file, *mounts]))


def seen_layer(layer: str | None, host_root: str | None, engine_root: Path = Path(ENGINE_ROOT)) -> Path | None:
    """A container's writable layer (its folder on the Docker host) as the node sees it under `engine_root`, the
    engine's data root `host_root` mounted there; None if it lies elsewhere or the node does not see it."""
    if not layer or not host_root or not PurePosixPath(layer).is_relative_to(host_root):
        return None
    seen = engine_root / PurePosixPath(layer).relative_to(host_root)
    return seen if seen.is_dir() else None


# The forks its cgroup refused (cgroup v2, then v1), read with builtins only: a shell at its limit cannot fork.
_REFUSED = ("{ read -r _ n < /sys/fs/cgroup/pids.events || read -r _ n < /sys/fs/cgroup/pids/pids.events; } "
            "2>/dev/null && echo \"refused $n\"")


def capture(exit_file: str) -> str:
    """The shell lines a job's command follows: its output appended to LOG, and its exit status written to
    `exit_file` (a path in the container) as the shell leaves, however it leaves short of being killed; then the
    forks refused it at its pids limit, which a fork bomb that ends itself leaves as its only trace (its cgroup
    goes with the container, before the node could read it there)."""
    return f"exec >>{LOG} 2>&1; trap 'echo $? > {exit_file}; {_REFUSED} >> {exit_file}' EXIT"


def container_spec(attempt: Attempt, host_data_dir: Path) -> ContainerSpec:
    """The rank's container. It waits at its gate (a FIFO in its working directory) until a node takes the
    job, reads there what it needs of that node, and only then runs the command: so it can be started ahead,
    while every node is still busy, and the job begins on a node the moment one is free.

    User code runs unprivileged (a non-root user, no capabilities, no new privileges) and with a bound on its
    processes (Settings.job_pids_limit): a fork bomb in a job stops at its own container instead of taking the
    host's PIDs. Azure's VMs set no such bound, so the default is generous: far more than a data loader's workers
    or an MPI rank's threads need."""
    mounts = {str(host_data_dir / attempt.workdir): WORKDIR, str(host_data_dir / attempt.log_file): LOG}
    mounts.update({str(host_data_dir / m.source): m.target for m in attempt.mounts})
    # A SIGTERM (its node being taken by a preemption) is for the user's code: tini, the container's init, passes
    # it to the whole process group, and the `sh -c` around the command outlives it (a trap that does nothing;
    # its children still get the default action) so the container lasts as long as the code does.
    env = {**attempt.env, "TINI_KILL_PROCESS_GROUP": "1"}
    # The node unlinks the gate once it is open.
    command = f"{capture(f'{WORKDIR}/{EXIT}')}; trap : TERM; . ./{GATE}; {attempt.command}"
    return ContainerSpec(name=attempt.container_name, image=attempt.image, command=[command],
                         entrypoint=["/bin/sh", "-c"], labels=attempt.labels, env=env, cpus=attempt.cpus,
                         memory_bytes=attempt.memory_bytes, gpus=attempt.gpus, network=attempt.network,
                         mounts=mounts, read_only=tuple(m.target for m in attempt.mounts if m.read_only),
                         user=attempt.user, working_dir=WORKDIR, drop_capabilities=True,
                         pids_limit=attempt.pids_limit)


def stage(attempt: Attempt, runtime: Containers, broker: redis.Redis, data_dir: Path, host_data_dir: Path) -> Observed:
    """Lay out the rank's directories and start its container, waiting at its gate: in a network sandbox of
    its cluster's pool when one is free, else on the jobs network with a namespace of its own."""
    lay_out(attempt, data_dir)
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


def mount_checks(attempt: Attempt, data_dir: Path) -> str:
    """Shell lines, run at the gate before the command, that stop the job unless each of its mounts is the very
    folder or file laid out for it. The engine resolves a mount's source when the container starts: a job writing
    into a folder that another job mounts could swap it for a link in between, and the engine would follow that
    link on the host. A mount shows the device and inode of what was mounted, which no swap can fake."""
    mounts = {attempt.workdir: WORKDIR, attempt.log_file: LOG, **{m.source: m.target for m in attempt.mounts}}
    lines = []
    for source, target in mounts.items():
        expected, where = confined.identity(data_dir, source), shlex.quote(target)
        lines.append(f'[ "$(stat -c %d:%i -- {where})" = {expected} ] || {{ echo "amlemu: {target} is not what was '
                     f'laid out for it (a link swapped in?); the job stops." >&2; exit {MOUNT_MISMATCH}; }}\n')
    return "".join(lines)


def recorded(exit_file: Path) -> Exit | None:
    """The exit status the shell wrote; the job could swap the file for a link, which is not followed."""
    try:
        status, *rest = (confined.read_small(exit_file) or b"").decode().splitlines() or [""]
        refused = next((int(w[1]) for line in rest
                        if len(w := line.split()) == 2 and w[0] == "refused" and w[1].isdigit()), 0)
        return Exit(code=int(status), oom_killed=False, refused_forks=refused)
    except ValueError:  # not yet there, or being written
        return None


def tail(log_file: Path, lines: int = LOG_TAIL_LINES, window: int = 64 * 1024) -> str:
    """The last `lines` lines of the log (read from its end: a log may be large). A log its writer swapped for
    a link is not followed."""
    try:
        fd = os.open(log_file, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:  # not there yet, or a link
        return ""
    return confined.read_end(fd, lines, window)
