"""Capacity shortages over REST: /_emulator/capacity shows them, PUT makes one, DELETE restores capacity, PUT
/_emulator/capacity/schedule sets seeded random ones; what was asked for is kept over a restart of the api. Bad input
gets an ARM error naming the field and changes nothing; a Reader cannot change them."""

from datetime import datetime

import pytest
from fastapi.testclient import TestClient

from emulator.api.app import create_app
from tests.service.conftest import RESOURCE
from tests.service.test_api import assert_arm_error
from tests.service.test_roles_api import bearer, refused

CAPACITY = "/_emulator/capacity"


def _capacity(client, auth) -> dict:
    response = client.get(CAPACITY, headers=auth)
    assert response.status_code == 200, response.text
    return response.json()


def _put(client, auth, path: str, body: dict) -> dict:
    response = client.put(path, json=body, headers=auth)
    assert response.status_code == 200, response.text
    return response.json()


def test_capacity_is_available_until_a_shortage_is_asked_for_and_returns_when_restored(client, auth):
    assert _capacity(client, auth) == {"shortages": [], "schedule": {
        "every": None, "for": 60.0, "seed": None, "region": "*", "family": "*", "priority": "LowPriority",
        "since": None, "source": "settings", "windows": []}}

    view = _put(client, auth, CAPACITY, {"family": "standardDSv2Family", "seconds": 120})
    (shortage,) = view["shortages"]
    assert {k: shortage[k] for k in ("region", "family", "priority", "source")} == \
        {"region": "*", "family": "standardDSv2Family", "priority": "LowPriority", "source": "request"}
    assert shortage["end"] > shortage["start"]
    view = _put(client, auth, CAPACITY, {"region": "eastus", "priority": "Dedicated"})
    assert [(s["region"], s["priority"], s["end"]) for s in view["shortages"]][1] == ("eastus", "Dedicated", None)

    response = client.delete(CAPACITY, headers=auth)
    assert response.status_code == 200, response.text
    assert response.json()["shortages"] == [] and response.json()["schedule"]["every"] is None


def test_a_seeded_schedule_lists_the_same_windows_for_the_same_seed(client, auth):
    body = {"every": 600, "for": 60, "seed": 42, "family": "standardDSv2Family"}
    first = _put(client, auth, f"{CAPACITY}/schedule", body)["schedule"]
    assert (first["every"], first["for"], first["seed"], first["source"]) == (600, 60, 42, "request")
    assert len(first["windows"]) == 5 and all(w["family"] == "standardDSv2Family" for w in first["windows"])
    again = _put(client, auth, f"{CAPACITY}/schedule", body)["schedule"]

    def offsets(schedule: dict) -> list[tuple[float, float]]:  # from when it was set: `since` moves, they do not
        since = datetime.fromisoformat(schedule["since"])
        return [((datetime.fromisoformat(w["start"]) - since).total_seconds(),
                 (datetime.fromisoformat(w["end"]) - since).total_seconds()) for w in schedule["windows"]]
    assert offsets(again) == pytest.approx(offsets(first)) and offsets(first)[0][0] > 0
    unseeded = _put(client, auth, f"{CAPACITY}/schedule", {"every": 600})["schedule"]
    assert isinstance(unseeded["seed"], int)  # drawn once and kept, so a restart keeps its course
    assert _put(client, auth, f"{CAPACITY}/schedule", {"every": None})["schedule"]["windows"] == []


def test_shortages_asked_for_are_kept_over_a_restart(settings, client, auth, app):
    _put(client, auth, CAPACITY, {"family": "standardNCFamily"})
    _put(client, auth, f"{CAPACITY}/schedule", {"every": 300, "seed": 9})
    before = _capacity(client, auth)
    app.state.context.store.close()
    restarted = create_app(settings)
    try:
        with TestClient(restarted, base_url=RESOURCE) as again:
            assert _capacity(again, auth) == before
    finally:
        restarted.state.context.store.close()


def test_bad_requests_name_their_field_and_change_nothing(client, auth, secret):
    before = _capacity(client, auth)
    for body, target in (({"family": "nope"}, "family"), ({"priority": "Spot"}, "priority"),
                         ({"seconds": -1}, "seconds"), ({"seconds": True}, "seconds"), ({"minutes": 1}, "minutes"),
                         ([], "body")):
        assert_arm_error(client.put(CAPACITY, json=body, headers=auth), 400, target=target)
    for body, target in (({"every": 0}, "every"), ({"every": 60, "for": "long"}, "for"),
                         ({"every": 60, "seed": "x"}, "seed")):
        assert_arm_error(client.put(f"{CAPACITY}/schedule", json=body, headers=auth), 400, target=target)
    assert _capacity(client, auth) == before
    assert client.put(CAPACITY, json={}).status_code == 401
    refused(client.put(CAPACITY, headers=bearer(secret, "Reader"), json={}),
            "Microsoft.MachineLearningServices/emulator/write", "/")
    refused(client.delete(CAPACITY, headers=bearer(secret, "Reader")),
            "Microsoft.MachineLearningServices/emulator/write", "/")
    assert _capacity(client, auth) == before
    assert client.get(CAPACITY, headers=bearer(secret, "Reader")).status_code == 200
