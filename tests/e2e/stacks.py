"""Composed stacks of their own for the end-to-end tests: each with its project, ports, data folder, networks,
started with `docker compose` as a user would, and removed with everything it made."""

import os
import socket
import subprocess
import uuid
from pathlib import Path

from emulator.cli.stack import ROOT, Stack, compose_command
from emulator.runtime.base import ROLES
from emulator.runtime.docker import DockerRuntime

PIDS_LIMIT, DISK_LIMIT_GB = 512, 1  # the suite's stack's job limits (test_job_limits_sdk.py)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def own_env(home: Path, kind: str, **more: str) -> dict[str, str]:
    """The variables a user sets to run a second stack beside the first: data folder, ports, names."""
    suffix = uuid.uuid4().hex[:6]
    return {"AMLEMU_HOME": str(home), "AMLEMU_PORT": str(free_port()), "AMLEMU_SCORING_PORT": str(free_port()),
            "AMLEMU_PROJECT": f"amlemu-{kind}-{suffix}", "AMLEMU_STACK": f"{kind}-{suffix}",
            "AMLEMU_NETWORK": f"amlemu-{kind}-{suffix}", "AMLEMU_TIME_SCALE": "1.0",
            "AMLEMU_EXTERNAL_FETCH": "false", **more}  # this machine sends nothing outside: the mirror only


def compose_up(env: dict[str, str]) -> Stack:
    """`docker compose -p <project> up -d` in the repository, with only `env` added to the caller's variables:
    what a user types (compose reads docker-compose.yml and .env there)."""
    started = subprocess.run(compose_command() + ["-p", env["AMLEMU_PROJECT"], "up", "-d"], cwd=ROOT,
                             env={**os.environ, **env}, capture_output=True, text=True)
    assert started.returncode == 0, started.stderr
    return Stack(home=Path(env["AMLEMU_HOME"]), port=int(env["AMLEMU_PORT"]),
                 scoring_port=int(env["AMLEMU_SCORING_PORT"]), project=env["AMLEMU_PROJECT"],
                 label=env["AMLEMU_STACK"], network=env["AMLEMU_NETWORK"])


def remove(stack: Stack) -> None:
    """The controller first (nothing new starts), then every container, volume and network the stack made."""
    runtime = DockerRuntime()
    stack.compose("stop", "controller", capture=True)
    for role in ROLES:
        for container in runtime.list({"amlemu.stack": stack.label, "amlemu.role": role}):
            runtime.remove(container.id)
    stack.compose("down", "-v", capture=True)
    for volume in runtime.volumes({"amlemu.stack": stack.label}):  # compute instances' homes
        runtime.remove_volume(volume)
    stack.remove_networks(runtime)
