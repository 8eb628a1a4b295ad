"""A model server answers only requests carrying its deployment's key (the scoring router's, the probes'): the
gunicorn config baked into serving images wraps the inference server's WSGI app."""

import os
import subprocess
import types

from emulator import confined
from emulator.domain.serving import model_server

SECRET = b"s" * 32
DEPLOYMENT = "/subscriptions/s/resourcegroups/rg/providers/microsoft.machinelearningservices/workspaces/w" \
             "/onlineendpoints/ep/deployments/blue"


def _guarded(monkeypatch, key: str):
    monkeypatch.setenv(model_server.KEY_ENV, key)
    config: dict = {}
    exec(compile(model_server.GUARD_CONFIG, model_server.GUARD, "exec"), config)  # what gunicorn does with --config
    worker = types.SimpleNamespace(wsgi=lambda environ, start_response: [b"scored"])
    config["post_worker_init"](worker)
    return worker.wsgi


def _call(app, headers: dict) -> tuple[str, bytes]:
    seen = []
    body = b"".join(app({f"HTTP_{k.upper().replace('-', '_')}": v for k, v in headers.items()},
                        lambda status, _headers: seen.append(status)))
    return (seen[0] if seen else "200 OK"), body


def test_only_the_deployments_key_reaches_the_server_and_the_key_leaves_the_environment(monkeypatch):
    key = model_server.server_key(SECRET, DEPLOYMENT)
    app = _guarded(monkeypatch, key)
    assert model_server.KEY_ENV not in os.environ  # the user's code (the workers) cannot read it
    assert _call(app, {model_server.KEY_HEADER: key}) == ("200 OK", b"scored")
    for headers in ({}, {model_server.KEY_HEADER: "0" * 32}, {model_server.KEY_HEADER: model_server.server_key(SECRET, "other")}):
        status, body = _call(app, headers)
        assert status == "403 Forbidden" and b"scoring URL" in body


def test_a_server_started_without_a_key_answers_nobody(monkeypatch):
    app = _guarded(monkeypatch, "")
    assert _call(app, {model_server.KEY_HEADER: ""})[0] == "403 Forbidden"


def test_keys_differ_per_deployment_and_per_stack():
    assert model_server.server_key(SECRET, DEPLOYMENT) != model_server.server_key(SECRET, DEPLOYMENT + "2")
    assert model_server.server_key(SECRET, DEPLOYMENT) != model_server.server_key(b"t" * 32, DEPLOYMENT)


def _start_checks(tmp_path, expected: dict) -> subprocess.CompletedProcess:
    """The model server's start script up to its server: the mount checks alone."""
    checks = model_server.START_SCRIPT.split("export GUNICORN_CMD_ARGS")[0]
    env = {"PATH": os.environ["PATH"], model_server.MOUNT_CHECKS_ENV: model_server.mount_checks(expected),
           "AMLEMU_LOG_FILE": str(tmp_path / "server.log")}
    return subprocess.run(["sh", "-c", checks], env=env, capture_output=True, text=True)


def test_a_model_server_starts_only_on_the_mounts_the_controller_checked(tmp_path):
    for name in ("model dir", "code", "secret"):
        (tmp_path / name).mkdir()
    expected = {str(tmp_path / n): confined.identity(tmp_path, n) for n in ("model dir", "code")}
    assert _start_checks(tmp_path, expected).returncode == 0
    (tmp_path / "model dir").rename(tmp_path / "moved")
    (tmp_path / "model dir").symlink_to(tmp_path / "secret")  # what the engine would then have mounted
    assert _start_checks(tmp_path, expected).returncode == 97
    assert "model dir is not what was laid out for it" in (tmp_path / "server.log").read_text()
