"""`docker compose up` in the repository gives the stack `make up` gives, with nothing but the user's own choices
(project, ports, data folder) set; and a container that cannot start says why, to the SDK user and in
`amlemu status`, while the controller retries it with backoff and logs the reason once."""

import json
import os
import subprocess
import sys
from pathlib import Path

import docker
import pytest

from emulator.cli.stack import ROOT, Stack, python_path
from tests.e2e import stacks

pytestmark = pytest.mark.e2e
PROBE = Path(__file__).with_name("compose_probe.py")
AMLEMU = str(Path(sys.executable).parent / "amlemu")
# A user's clone is theirs, not root's: the services become the data folder's owner.
OWNER = 1000 if os.getuid() == 0 else os.getuid()


def _start(home: Path, kind: str, **more: str):
    home.mkdir()
    os.chown(home, OWNER, OWNER)
    stack = stacks.compose_up(stacks.own_env(home, kind, **more))
    assert stack.wait_healthy(timeout=120), stack.compose("logs", capture=True).stdout
    return stack


@pytest.fixture()
def plain_stack(tmp_path):
    stack = _start(tmp_path / "home", "plain")
    yield stack
    stacks.remove(stack)


@pytest.fixture()
def broken_stack(tmp_path):
    """Every bind mount of the containers it starts names a path the engine refuses (as an unset host data path
    once made them all relative)."""
    stack = _start(tmp_path / "home", "broken", AMLEMU_HOST_DATA_DIR="not/a/host/path")
    yield stack
    stacks.remove(stack)


def _env(stack: Stack) -> dict[str, str]:
    return {**os.environ, "AMLEMU_HOME": str(stack.home), "AMLEMU_PORT": str(stack.port),
            "AMLEMU_SCORING_PORT": str(stack.scoring_port), "AMLEMU_PROJECT": stack.project,
            "AMLEMU_STACK": stack.label, "AMLEMU_NETWORK": stack.network, **stack.env_vars()}


def _probe(stack: Stack, mode: str, workdir: Path) -> dict:
    result = subprocess.run([sys.executable, str(PROBE), mode, str(workdir)], capture_output=True, text=True,
                            env={**_env(stack), "PYTHONPATH": python_path(str(ROOT))}, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:] + stack.compose("logs", "api", capture=True).stdout[-6000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


def _controller_log(stack: Stack) -> str:
    return stack.compose("logs", "controller", capture=True).stdout


def test_plain_compose_up_runs_a_job_an_instance_and_a_deployment(plain_stack, tmp_path):
    assert (plain_stack.home / "token.key").stat().st_uid == OWNER  # `amlemu env` can read it
    assert f"is {plain_stack.home} on the Docker host" in _controller_log(plain_stack)
    seen = _probe(plain_stack, "works", tmp_path / "work")
    assert seen["job"] == ["Completed", True]
    assert seen["instance"] == ["Running", True]
    assert seen["deployment"] == "Succeeded"
    assert seen["invoke"] == {"echo": {"x": 1}}
    # The Docker socket is the controller's and its nodes' (cluster nodes, the instance's agent): nobody else's.
    client = docker.from_env()
    holders = {c.labels.get("amlemu.role") or c.labels["com.docker.compose.service"]
               for c in client.containers.list(filters={"label": f"amlemu.stack={plain_stack.label}"})
               if any(m["Destination"] == "/var/run/docker.sock" for m in c.attrs["Mounts"])}
    assert holders == {"controller", "node", "agent"}


def test_a_container_that_cannot_start_says_why_and_is_retried_with_backoff(broken_stack, tmp_path):
    seen = _probe(broken_stack, "broken", tmp_path / "work")
    [(code, message)] = seen["cluster"]
    assert code == "NodeSetupFailure" and "could not start" in message and "invalid characters" in message
    assert "unusable" in seen["node_states"]
    assert "could not start" in seen["instance"] and "invalid characters" in seen["instance"]
    assert seen["instance_state"] == "CreateFailed"
    assert "ResourceNotReady" in seen["deployment"] and "could not start" in seen["deployment"]
    assert seen["deployment_state"] == "Failed"

    status = subprocess.run([AMLEMU, "status"], capture_output=True, text=True, env=_env(broken_stack),
                            timeout=60)
    assert status.returncode == 0, status.stderr
    assert "NodeSetupFailure" in status.stdout and "ResourceNotReady" in status.stdout
    assert "ComputeInstanceFailed" in status.stdout

    # The cluster kept trying (the probe saw three nodes come and fail), and the log said the reason once.
    assert _controller_log(broken_stack).count("of cpu failed to start") == 1
