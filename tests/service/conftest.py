"""The control plane in-process: create_app on a temporary data dir, driven through TestClient.

No Docker, no network, no controller: the api alone, as the SDK sees it.
"""

import os

import pytest
from fastapi.testclient import TestClient

from emulator import tokens
from emulator.api.app import create_app
from emulator.settings import Settings

RESOURCE = "https://localhost:8443"


@pytest.fixture
def settings(tmp_path, monkeypatch) -> Settings:
    # The tests must not pick up a developer's AMLEMU_* environment (database URL, ports, names).
    for name in list(os.environ):
        if name.upper().startswith("AMLEMU_"):
            monkeypatch.delenv(name)
    return Settings(data_dir=tmp_path)


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
def token(client, identity_header) -> str:
    response = client.get("/msi/token", params={"resource": RESOURCE}, headers=identity_header)
    assert response.status_code == 200, response.text
    return response.json()["access_token"]


@pytest.fixture
def auth(token) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}
