"""The api's one after-commit listener: a request that changed what the controller acts on wakes it, one that
changed endpoints or deployments marks the scoring router's table stale; reads do neither."""

import pytest
from fastapi.testclient import TestClient

from emulator.api.app import create_app
from emulator.store import changes
from tests.service.conftest import RESOURCE, _token
from tests.service.test_api import API, WS_PATH
from tests.service.test_online_endpoints import ENDPOINTS, endpoint_body


@pytest.fixture
def woken() -> list[str]:
    return []


@pytest.fixture
def hooked(settings, woken):
    app = create_app(settings, wake=lambda: woken.append("wake"))
    with TestClient(app, base_url=RESOURCE, raise_server_exceptions=False) as client:
        yield client, {"Authorization": f"Bearer {_token(client, app.state.context.secret)}"}
    app.state.context.store.close()


def test_an_endpoint_change_wakes_and_marks_and_reads_do_neither(hooked, woken, settings):
    client, auth = hooked
    assert client.put(f"{ENDPOINTS}/ep-one", params=API, headers=auth, json=endpoint_body()).status_code == 201
    marked = changes.changed_at(settings.routes_changed)
    assert marked and woken == ["wake"]
    assert client.get(f"{ENDPOINTS}/ep-one", params=API, headers=auth).status_code == 200
    assert client.post(f"{ENDPOINTS}/ep-one/listKeys", params=API, headers=auth).status_code == 200
    assert woken == ["wake"] and changes.changed_at(settings.routes_changed) == marked


def test_an_asset_version_wakes_nothing(hooked, woken, settings):
    client, auth = hooked
    env = {"properties": {"image": "python:3.11-slim"}}
    assert client.put(f"{WS_PATH}/environments/env/versions/1", params=API, headers=auth, json=env).status_code == 201
    assert woken == [] and not changes.changed_at(settings.routes_changed)


def test_a_failing_wake_leaves_the_request_answered_and_committed(settings):
    def broken() -> None:
        raise ConnectionError("no broker")
    app = create_app(settings, wake=broken)
    with TestClient(app, base_url=RESOURCE, raise_server_exceptions=False) as client:
        auth = {"Authorization": f"Bearer {_token(client, app.state.context.secret)}"}
        assert client.put(f"{ENDPOINTS}/ep-one", params=API, headers=auth, json=endpoint_body()).status_code == 201
        assert client.get(f"{ENDPOINTS}/ep-one", params=API, headers=auth).status_code == 200
    app.state.context.store.close()
