"""The control plane in-process: create_app on a temporary data dir, driven through TestClient.

No Docker, no network, no controller: the api alone, as the SDK sees it.
"""

import os
from dataclasses import dataclass
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from emulator import tokens
from emulator.api.app import create_app
from emulator.settings import Settings

RESOURCE = "https://localhost:8443"


def _settings(data_dir: Path, monkeypatch: pytest.MonkeyPatch) -> Settings:
    # The tests must not pick up a developer's AMLEMU_* environment (database URL, ports, names).
    for name in list(os.environ):
        if name.upper().startswith("AMLEMU_"):
            monkeypatch.delenv(name)
    return Settings(data_dir=data_dir)


def _token(client: TestClient, secret: bytes) -> str:
    response = client.get("/msi/token", params={"resource": RESOURCE},
                          headers={"X-IDENTITY-HEADER": tokens.identity_header(secret)})
    assert response.status_code == 200, response.text
    return response.json()["access_token"]


@pytest.fixture
def settings(tmp_path, monkeypatch) -> Settings:
    return _settings(tmp_path, monkeypatch)


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
def shared(tmp_path_factory) -> Api:
    """One app for a whole module, for tests that must change nothing (refusals): faster, and any leak
    of state from one refusal into the store would show up in the next test's before/after comparison."""
    with pytest.MonkeyPatch.context() as monkeypatch:
        settings = _settings(tmp_path_factory.mktemp("shared"), monkeypatch)
    app = create_app(settings)
    with TestClient(app, base_url=RESOURCE, raise_server_exceptions=False) as client:
        secret = app.state.context.secret
        yield Api(app, client, secret, {"Authorization": f"Bearer {_token(client, secret)}"})
    app.state.context.store.close()
