"""The stack with its state in PostgreSQL, as a user starts it (the compose profile `postgres`, AMLEMU_DATABASE_URL
naming it): every service opens the store (the scoring router, on the host's network, reaches the database on
127.0.0.1), a cluster runs a command job, and the rows are in PostgreSQL, no SQLite file beside them. (An online
deployment answered on it too, by hand: a minute and a half more than this suite's stack already spends on them.)"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from amlemu.session import free_port
from emulator.cli.stack import ROOT, python_path
from tests.e2e import stacks
from tests.e2e.test_compose_up import OWNER, PROBE, _env

pytestmark = pytest.mark.e2e


@pytest.fixture()
def postgres_stack(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    os.chown(home, OWNER, OWNER)
    port = str(free_port())
    env = stacks.own_env(home, "pg", COMPOSE_PROFILES="postgres", AMLEMU_POSTGRES_PORT=port,
                         AMLEMU_POSTGRES_PASSWORD="e2e-secret",
                         AMLEMU_DATABASE_URL=f"postgresql+psycopg://amlemu:e2e-secret@postgres:{port}/amlemu")
    stack = stacks.compose_up(env)
    try:
        assert stack.wait_healthy(timeout=120), stack.compose("logs", capture=True).stdout[-5000:]
        yield stack, port
    finally:
        stacks.remove(stack)
        stack.compose("--profile", "postgres", "down", "-v", capture=True)  # the database and its volume


def _psql(stack, port: str, sql: str) -> str:
    return stack.compose("--profile", "postgres", "exec", "-T", "postgres", "psql", "-p", port, "-U", "amlemu",
                         "-d", "amlemu", "-tAc", sql, capture=True).stdout.strip()


def test_a_job_runs_with_the_state_in_postgres(postgres_stack, tmp_path):
    stack, port = postgres_stack
    assert stack.wait_healthy(timeout=60, check=stack.scoring_healthy)  # it serves once its store is open
    result = subprocess.run([sys.executable, str(PROBE), "stored", str(tmp_path / "work")], capture_output=True,
                            text=True, env={**_env(stack), "PYTHONPATH": python_path(str(ROOT))}, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    seen = json.loads(result.stdout.strip().splitlines()[-1])
    assert seen == {"job": ["Completed", True]}
    assert _psql(stack, port, "SELECT status FROM jobs") == "Completed"
    assert _psql(stack, port, "SELECT count(*) FROM computes WHERE name = 'cpu'") == "1"
    assert not (Path(stack.home) / "amlemu.db").exists()
