"""A stack of its own for a test session or a script: free ports, a temporary data folder, its own networks; at
the end every container, network and volume it made is removed (after a killed session, by the next one)."""

import os
import shutil
import socket
import sys
import tempfile
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from urllib.parse import urlsplit

import httpx

from emulator.cli import images
from emulator.cli.stack import Stack, apply_client_shim
from emulator.errors import RuntimeUnavailable
from emulator.runtime import labels
from emulator.runtime.base import ROLES
from emulator.runtime.docker import DockerRuntime

Progress = Callable[[str], None]
OWNER = "amlemu.owner"  # on the stack's redis container: host:pid of the process that started it
PROJECT = "com.docker.compose.project"
START_SECONDS = 180
_STACK_FIELDS = {"AMLEMU_HOME", "AMLEMU_PORT", "AMLEMU_SCORING_PORT", "AMLEMU_PROJECT", "AMLEMU_STACK",
                 "AMLEMU_NETWORK"}  # a Stack's own fields: the rest of its variables are its settings


def _stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def own_env(home: Path, kind: str, **more: str) -> dict[str, str]:
    """The variables that give a stack its own data folder, ports and names beside any other stack."""
    suffix = uuid.uuid4().hex[:6]
    return {"AMLEMU_HOME": str(home), "AMLEMU_PORT": str(free_port()), "AMLEMU_SCORING_PORT": str(free_port()),
            "AMLEMU_PROJECT": f"amlemu-{kind}-{suffix}", "AMLEMU_STACK": f"{kind}-{suffix}",
            "AMLEMU_NETWORK": f"amlemu-{kind}-{suffix}", **more}


def remove(stack: Stack, runtime: DockerRuntime | None = None) -> None:
    """The controller first (nothing new starts), then every container, volume and network the stack made."""
    runtime = runtime or DockerRuntime()
    stack.compose("stop", "controller", capture=True)
    for role in ROLES:
        for container in runtime.list({labels.STACK: stack.label, labels.ROLE: role}):
            runtime.remove(container.id)
    stack.compose("down", "-v", capture=True)
    for volume in runtime.volumes({labels.STACK: stack.label}):  # compute instances' homes
        runtime.remove_volume(volume)
    stack.remove_networks(runtime)


def _owner() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


def _gone(owner: str) -> bool:
    """The process that started a stack on this machine has ended (another machine's, or a live one, is kept)."""
    host, _, pid = owner.rpartition(":")
    if host != socket.gethostname() or not pid.isdigit():
        return False
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return True
    except PermissionError:  # alive, another user's
        return False
    return False


def reap_orphans(runtime: DockerRuntime, progress: Progress = _stderr) -> list[str]:
    """Remove the stacks whose starting process died before it could (SIGKILL, a lost CI runner)."""
    removed = []
    for redis in runtime.list({OWNER: None}, managed=False):
        owner, label, project = redis.labels.get(OWNER, ""), redis.labels.get(labels.STACK), redis.labels.get(PROJECT)
        if owner and label and project and _gone(owner):
            progress(f"removing stack {project}: the process that started it ({owner}) is gone")
            remove(Stack(home=Path(tempfile.gettempdir()), port=0, project=project, label=label,
                         network=f"amlemu-{label}"), runtime)
            removed.append(project)
    return removed


@dataclass
class Emulator:
    """A running stack, and the SDK pointed at it: `activate` sets what `amlemu env` prints in this process."""
    stack: Stack
    owned: bool = True  # started here: `stop` removes it, with its data folder
    _saved: dict[str, str | None] = field(default_factory=dict, repr=False)

    @property
    def url(self) -> str:
        return self.stack.url

    @property
    def scoring_url(self) -> str:
        return self.stack.scoring_url

    def env(self) -> dict[str, str]:
        """What `amlemu env` exports for this stack (ARM metadata, CA bundle, managed identity, client shim)."""
        return self.stack.env_vars()

    def activate(self) -> None:
        """Point this process (and the processes it starts) at the stack; `deactivate` puts the old values back."""
        values = self.env()
        for name in values:
            self._saved.setdefault(name, os.environ.get(name))
        os.environ.update(values)
        apply_client_shim()  # *.blob.localhost resolves here whatever PYTHONPATH the process started with

    def deactivate(self) -> None:
        for name, value in self._saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        self._saved.clear()

    def ml_client(self, workspace: str | None = None):
        """An azure-ai-ml MLClient on the stack's workspace, with the stack's managed identity (never a credential
        from the environment that could reach Azure itself)."""
        from azure.ai.ml import MLClient
        from azure.identity import ManagedIdentityCredential

        self.activate()
        return MLClient(ManagedIdentityCredential(), self.stack.subscription, self.stack.resource_group,
                        workspace or self.stack.workspace)

    def stop(self) -> None:
        self.deactivate()
        if self.owned:
            remove(self.stack)
            shutil.rmtree(self.stack.home, ignore_errors=True)  # files of jobs' own user may stay, in the temp folder

    def __enter__(self) -> "Emulator":
        return self

    def __exit__(self, *exc) -> None:
        self.stop()


def start(settings: Mapping[str, str] | None = None, *, keep: bool = False,
          progress: Progress = _stderr) -> Emulator:
    """Build the images that are missing, start a stack of its own, and wait until it serves. `settings` are more
    AMLEMU_* variables (README: settings). A kept stack (`keep`) is never removed by a later session's reaping."""
    runtime = DockerRuntime()
    reap_orphans(runtime, progress)
    images.build(progress, only_missing=True)
    home = Path(tempfile.mkdtemp(prefix="amlemu-"))
    env = own_env(home, "session", AMLEMU_OWNER="" if keep else _owner(), **(settings or {}))
    stack = replace(Stack.from_env(env), settings=tuple((k, v) for k, v in env.items() if k not in _STACK_FIELDS))
    progress(f"starting amlemu stack {stack.project} on {stack.url}")
    try:
        stack.compose("up", "-d", capture=True)
        if not (stack.wait_healthy(START_SECONDS) and stack.wait_healthy(60, check=stack.scoring_healthy)):
            logs = stack.compose("logs", "--tail", "40", capture=True).stdout
            raise RuntimeUnavailable(f"the amlemu stack {stack.project} did not become healthy; its logs:\n{logs}")
    except BaseException:
        remove(stack, runtime)
        shutil.rmtree(home, ignore_errors=True)
        raise
    return Emulator(stack)


def connect(url: str | None = None, home: Path | str | None = None) -> Emulator:
    """A stack already running (`amlemu up`), by its URL, with the data folder it was started with (AMLEMU_HOME or
    the default): it is left running at the end."""
    base = Stack.from_env()
    stack = replace(base, home=Path(home).resolve() if home else base.home,
                    port=urlsplit(url).port or 443 if url else base.port)
    try:
        httpx.get(f"{stack.url}/_emulator/health", verify=False, timeout=5)
    except httpx.HTTPError as exc:
        raise RuntimeUnavailable(f"No amlemu stack answers at {stack.url} ({exc}): start one with `amlemu up` "
                                 "(AMLEMU_PORT chooses its port), or leave the URL out to start one of its own.") from exc
    if not (stack.home / "token.key").exists() or not stack.healthy():
        raise RuntimeUnavailable(f"The stack at {stack.url} was not started with the data folder {stack.home}: set "
                                 "AMLEMU_HOME to the folder it was started with (`amlemu up` prints it).")
    return Emulator(stack, owned=False)
