"""amlemu as a user's CI uses it: the wheel built from this repository, installed in a fresh venv beside a
throwaway project (user_project/) whose own pytest session uses the plugin's fixtures and AmlEmuContainer."""

import contextlib
import os
import re
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import docker
import pytest

from tests import venvs
from tests.waiting import wait_until

pytestmark = pytest.mark.docker
REPO = Path(__file__).resolve().parents[2]
PROJECT = Path(__file__).with_name("user_project")
IMAGE = "amlemu/emulator:{version}"  # what an installed wheel builds on first use (emulator/cli/stack.py)
USER_TESTS = ["test_user_training.py", "test_user_module_stack.py", "test_user_testcontainers.py"]


@pytest.fixture(scope="module")
def user(tmp_path_factory):
    """A venv with the built wheel and its pytest and testcontainers extras, and a copy of the project."""
    root = tmp_path_factory.mktemp("user")
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", str(REPO), "-w", str(root / "dist")],
                   check=True)
    wheel = next((root / "dist").glob("amlemu-*.whl"))
    venvs.make(root / "venv", f"{wheel}[pytest,testcontainers]")
    version = wheel.name.split("-")[1]
    project = shutil.copytree(PROJECT, root / "project")
    return root, project, IMAGE.format(version=version)


def _env(root: Path, **more: str) -> dict[str, str]:
    """A user's shell: their PATH and HOME, none of the suite's AMLEMU_* or PYTHONPATH."""
    kept = {k: v for k, v in os.environ.items() if k in ("HOME", "LANG", "DOCKER_HOST", "TMPDIR")}
    return {**kept, "PATH": f"{root / 'venv' / 'bin'}:/usr/local/bin:/usr/bin:/bin", **more}


def _session_objects() -> list[str]:
    """Containers, networks and volumes of stacks the plugin started (their amlemu.stack is session-*)."""
    client = docker.from_env()
    found = [c.name for c in client.containers.list(all=True, filters={"label": "amlemu.stack"}, ignore_removed=True)
             if c.labels["amlemu.stack"].startswith("session-")]
    found += [n.name for n in client.networks.list(filters={"label": "amlemu.stack"})
              if n.attrs["Labels"]["amlemu.stack"].startswith("session-")]
    found += [n.name for n in client.networks.list() if n.name.startswith("amlemu-session-")]
    found += [v.name for v in client.volumes.list() if v.name.startswith("amlemu-session-")]
    return found


def _pytest(user, *args: str, **env: str) -> subprocess.Popen:
    root, project, _ = user
    return subprocess.Popen([str(root / "venv" / "bin" / "pytest"), "-q", "-p", "no:cacheprovider", "-W", "ignore", *args],
                            cwd=project, env=_env(root, **env), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, preexec_fn=_as_in_a_terminal)


def _as_in_a_terminal() -> None:
    """Ctrl-C reaches the session as in a user's terminal, even when this suite runs in the background of a shell
    without job control (which starts it with SIGINT ignored, and a child inherits that)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def test_user_suite_runs_on_its_own_stacks_and_leaves_nothing(user):
    _, _, image = user
    with contextlib.suppress(docker.errors.ImageNotFound):
        docker.from_env().images.remove(image)  # a first use: the wheel builds its image, saying so
    run = _pytest(user, *USER_TESTS)
    out, _ = run.communicate(timeout=1500)
    assert run.returncode == 0, out[-6000:]
    assert "4 passed" in out, out[-3000:]
    assert f"amlemu: building {image}" in out and "amlemu: starting amlemu stack" in out, out[:3000]
    assert _session_objects() == []


def test_an_interrupted_session_removes_its_stack(user, tmp_path):
    mark = tmp_path / "up"
    run = _pytest(user, "test_user_waits.py", "-s", AMLEMU_TEST_MARK=str(mark))
    wait_until(mark.exists, timeout=300, interval=0.5, message="the session's stack up")
    run.send_signal(signal.SIGINT)  # Ctrl-C
    try:
        out, _ = run.communicate(timeout=180)
    finally:  # a session still tearing down is killed: its stack is then the next test's to reap, not a live one
        if run.poll() is None:
            run.kill()
    assert "KeyboardInterrupt" in out, out[-3000:]
    assert _session_objects() == []


def test_a_killed_session_is_cleaned_by_the_next(user, tmp_path):
    mark = tmp_path / "up"
    run = _pytest(user, "test_user_waits.py", "-s", AMLEMU_TEST_MARK=str(mark))
    wait_until(mark.exists, timeout=300, interval=0.5, message="the session's stack up")
    run.kill()  # SIGKILL: no teardown can run
    run.communicate(timeout=60)
    assert _session_objects() != []
    root, project, _ = user
    reaped = subprocess.run([str(root / "venv" / "bin" / "python"), "-c",
                             "import amlemu.session as s; from emulator.runtime.docker import DockerRuntime; "
                             "print(s.reap_orphans(DockerRuntime()))"], env=_env(root), capture_output=True, text=True)
    assert reaped.returncode == 0 and "amlemu-session-" in reaped.stdout, reaped.stderr
    assert _session_objects() == []


def test_a_kept_stack_is_reused_by_url_then_removed(user):
    root, _, _ = user
    kept = _pytest(user, "test_user_module_stack.py", "--amlemu-keep")
    out, _ = kept.communicate(timeout=600)
    assert kept.returncode == 0, out[-3000:]
    lines = [line for line in out.splitlines() if line.startswith("amlemu: kept ")]
    assert len(lines) == 2, out[-3000:]  # the session's stack and the module's
    stacks = [re.search(r" at (\S+); remove it with: (.*) amlemu down", line).groups() for line in lines]
    try:
        url, assignments = stacks[0]
        home = dict(a.split("=", 1) for a in assignments.split())["AMLEMU_HOME"]
        reused = _pytest(user, "test_user_reuse.py", "--amlemu-url", url, AMLEMU_HOME=home)
        out, _ = reused.communicate(timeout=300)
        assert reused.returncode == 0, out[-3000:]
    finally:
        for _, assignments in stacks:
            subprocess.run([str(root / "venv" / "bin" / "amlemu"), "down", "--remove"], capture_output=True,
                           env=_env(root, **dict(a.split("=", 1) for a in assignments.split())), check=True)
    assert _session_objects() == []
