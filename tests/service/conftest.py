"""The control plane in-process: create_app on a temporary data dir, driven through TestClient.

No Docker, no network, no controller: the api alone, as the SDK sees it.
"""

import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from amlemu.session import free_port
from emulator import tokens
from emulator.api.app import create_app
from emulator.cli.stack import Stack
from emulator.settings import Settings

RESOURCE = "https://localhost:8443"
ROOT = Path(__file__).resolve().parents[2]


def _settings(data_dir: Path, monkeypatch: pytest.MonkeyPatch) -> Settings:
    # The tests must not pick up a developer's AMLEMU_* environment (database URL, ports, names).
    for name in list(os.environ):
        if name.upper().startswith("AMLEMU_"):
            monkeypatch.delenv(name)
    # No test reaches outside the machine: one that fetches an input turns fetching on against its own server.
    return Settings(data_dir=data_dir, external_fetch=False)


def _token(client: TestClient, secret: bytes) -> str:
    response = client.get("/msi/token", params={"resource": RESOURCE},
                          headers={"X-IDENTITY-HEADER": tokens.identity_header(secret)})
    assert response.status_code == 200, response.text
    return response.json()["access_token"]


@contextmanager
def _store_url(request: pytest.FixtureRequest) -> Iterator[str]:
    """SQLite in the data folder (""), or with `pytest --store postgresql` a fresh schema on the session's PostgreSQL."""
    if request.config.getoption("store") != "postgresql":
        yield ""
        return
    with request.getfixturevalue("postgres_databases").fresh() as url:
        yield url


@pytest.fixture
def settings(tmp_path, monkeypatch, request) -> Iterator[Settings]:
    with _store_url(request) as url:
        yield _settings(tmp_path, monkeypatch).model_copy(update={"database_url": url})


@pytest.fixture
def app(settings):
    app = create_app(settings)
    yield app
    app.state.context.store.close()


@pytest.fixture
def client(app):
    # Server errors come back as responses (and are asserted on) rather than raised into the test.
    with TestClient(app, base_url=RESOURCE, raise_server_exceptions=False) as test_client:
        yield test_client


@pytest.fixture
def secret(app) -> bytes:
    return app.state.context.secret


@pytest.fixture
def identity_header(secret) -> dict[str, str]:
    return {"X-IDENTITY-HEADER": tokens.identity_header(secret)}


@pytest.fixture
def token(client, secret) -> str:
    return _token(client, secret)


@pytest.fixture
def auth(token) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


@dataclass
class Api:
    app: object
    client: TestClient
    secret: bytes
    auth: dict[str, str]


@pytest.fixture(scope="module")
def shared(tmp_path_factory, request) -> Api:
    """One app for a whole module, for tests that must change nothing (refusals): faster, and any leak
    of state from one refusal into the store would show up in the next test's before/after comparison."""
    with pytest.MonkeyPatch.context() as monkeypatch, _store_url(request) as url:
        settings = _settings(tmp_path_factory.mktemp("shared"), monkeypatch).model_copy(update={"database_url": url})
        app = create_app(settings)
        with TestClient(app, base_url=RESOURCE, raise_server_exceptions=False) as client:
            secret = app.state.context.secret
            yield Api(app, client, secret, {"Authorization": f"Bearer {_token(client, secret)}"})
        app.state.context.store.close()


def clean_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.upper().startswith("AMLEMU_")}


@dataclass
class LiveApi:
    stack: Stack
    pid: int


@pytest.fixture
def live_api_process(tmp_path) -> LiveApi:
    """The api as its own process (HTTPS on a free port, no controller), as `python -m emulator api` runs it."""
    port = free_port()
    home = tmp_path / "home"
    env = {**clean_env(), "AMLEMU_DATA_DIR": str(home), "AMLEMU_LISTEN_HOST": "127.0.0.1",
           "AMLEMU_LISTEN_PORT": str(port), "AMLEMU_PUBLIC_PORT": str(port),
           "AMLEMU_CONTROLLER_WAIT_SECONDS": "0"}  # an api on its own: no controller comes
    log = tmp_path / "api.log"  # a file, not a pipe nobody reads, which would block a talkative api
    with log.open("w") as stderr:
        api = subprocess.Popen([sys.executable, "-m", "emulator", "api"], env=env, cwd=ROOT,
                               stdout=subprocess.DEVNULL, stderr=stderr, text=True)
    try:
        stack = Stack(home=home, port=port, project="unused")
        if not stack.wait_healthy(timeout=60, check=stack.healthy):  # alive: no MLflow server for it to be ready
            api.kill()
            api.wait(timeout=10)
            pytest.fail(f"the api did not start: {log.read_text()[-3000:]}")
        yield LiveApi(stack, api.pid)
    finally:
        api.terminate()
        try:
            api.wait(timeout=10)
        except subprocess.TimeoutExpired:
            api.kill()
            api.wait(timeout=10)


@pytest.fixture
def live_api(live_api_process) -> Stack:
    return live_api_process.stack
