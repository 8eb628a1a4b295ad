"""Composed stacks of their own for the end-to-end tests: each with its project, ports, data folder, networks,
started with `docker compose` as a user would, and removed with everything it made."""

import os
import subprocess
from pathlib import Path

from amlemu import session
from amlemu.session import remove  # noqa: F401 (the e2e tests remove their stacks with it)
from emulator.cli.stack import ROOT, Stack, compose_command

PIDS_LIMIT, DISK_LIMIT_GB = 512, 1  # the suite's stack's job limits (test_job_limits_sdk.py)


def own_env(home: Path, kind: str, **more: str) -> dict[str, str]:
    """The variables a user sets to run a second stack beside the first: data folder, ports, names."""
    # this machine sends nothing outside: external data from the mirror only
    return session.own_env(home, kind, **{"AMLEMU_TIME_SCALE": "1.0", "AMLEMU_EXTERNAL_FETCH": "false", **more})


def compose_up(env: dict[str, str]) -> Stack:
    """`docker compose -p <project> up -d` in the repository, with only `env` added to the caller's variables:
    what a user types (compose reads docker-compose.yml and .env there)."""
    started = subprocess.run(compose_command() + ["-p", env["AMLEMU_PROJECT"], "up", "-d"], cwd=ROOT,
                             env={**os.environ, **env}, capture_output=True, text=True)
    assert started.returncode == 0, started.stderr
    return Stack(home=Path(env["AMLEMU_HOME"]), port=int(env["AMLEMU_PORT"]),
                 scoring_port=int(env["AMLEMU_SCORING_PORT"]), project=env["AMLEMU_PROJECT"],
                 label=env["AMLEMU_STACK"], network=env["AMLEMU_NETWORK"])
