"""The router's decisions on a routing table given directly: credentials, the deployment header, the weighted
pick with its randomness passed in, round robin, and the clear 4xx/5xx answers. The hop itself is a fake."""

import asyncio
import itertools

import httpx
import pytest

from emulator import tokens
from emulator.scoring import forward, table
from emulator.scoring.app import Router
from emulator.services import endpoints
from emulator.settings import Settings
from emulator.store import changes

SECRET = b"s" * 32
KEY = "/subscriptions/s/resourcegroups/rg/providers/microsoft.machinelearningservices/workspaces/w/onlineendpoints/ep"


class FakePool:
    def __init__(self, down: set[str] = frozenset()):
        self.calls, self.down = [], down

    async def request(self, address, method, path, headers, body, timeout, cluster=None):
        self.calls.append(address)
        if address in self.down:
            raise forward.Unreachable(address)
        return forward.Response(200, {b"content-type": b"text/plain"}, address.encode())

    def close(self):
        pass


def router(auth_mode="Key", traffic=None, draws=(0.0,), down=frozenset()) -> Router:
    draw = itertools.cycle(draws)
    r = Router(Settings(), store=None, secret=SECRET, draw=lambda: next(draw))
    r.pool = FakePool(down)
    r.routes = {"ep": table.Endpoint(KEY, "ep", auth_mode, ("k1", "k2"),
                                     traffic if traffic is not None else {"blue": 90, "green": 10}, {}, {
        "blue": table.Deployment("blue", ("b1:5001", "b2:5001"), 5.0),
        "green": table.Deployment("green", ("g1:5001",), 5.0),
        "empty": table.Deployment("empty", (), 5.0)})}
    r._refreshed = float("inf")  # no store behind it: never reread
    return r


def call(r: Router, headers=None, path="/endpoints/ep/score") -> httpx.Response:
    async def go():
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=r), base_url="http://router") as client:
            return await client.post(path, json={}, headers=headers or {})
    return asyncio.run(go())


def test_keys_are_checked():
    r = router()
    assert call(r).status_code == 401
    assert call(r, {"Authorization": "Bearer wrong"}).status_code == 401
    assert call(r, {"Authorization": "Bearer k1"}).status_code == 200
    assert call(r, {"Authorization": "Bearer k2"}).status_code == 200


def test_aml_tokens_and_aad_tokens():
    class Repo:  # what endpoints.token reads
        def online_endpoint(self, key):
            return type("Row", (), {"key": KEY, "name": "ep", "body": {"properties": {"authMode": "AMLToken"}}})()
    from datetime import UTC, datetime

    from emulator.domain.ids import WorkspaceRef
    token = endpoints.token(Repo(), WorkspaceRef("s", "rg", "w"), "ep", SECRET, datetime.now(UTC))["accessToken"]
    r = router("AMLToken")
    assert call(r, {"Authorization": f"Bearer {token}"}).status_code == 200
    assert call(r, {"Authorization": "Bearer k1"}).status_code == 401
    aad = router("AADToken")
    assert call(aad, {"Authorization": f"Bearer {tokens.issue(SECRET, 'https://ml.azure.com')[0]}"}).status_code == 200
    assert call(aad, {"Authorization": "Bearer k1"}).status_code == 401
    management = tokens.issue(SECRET, "https://localhost:8443")[0]
    assert call(aad, {"Authorization": f"Bearer {management}"}).status_code == 401
    assert call(aad, {"Authorization": f"Bearer {token}"}).status_code == 401


def test_traffic_pick_header_pin_and_round_robin():
    r = router(draws=(0.0, 0.95))
    auth = {"Authorization": "Bearer k1"}
    answers = [call(r, auth) for _ in range(4)]
    assert [a.headers["azureml-model-deployment"] for a in answers] == ["blue", "green", "blue", "green"]
    assert [a.text for a in answers if a.headers["azureml-model-deployment"] == "blue"] == ["b1:5001", "b2:5001"]
    pinned = call(r, {**auth, "azureml-model-deployment": "GREEN"})
    assert pinned.text == "g1:5001"
    unknown = call(r, {**auth, "azureml-model-deployment": "red"})
    assert unknown.status_code == 404 and "'red'" in unknown.json()["message"]
    assert call(r, {**auth, "azureml-model-deployment": "empty"}).status_code == 503


def test_no_traffic_unknown_endpoint_and_bad_paths():
    auth = {"Authorization": "Bearer k1"}
    r = router(traffic={})
    response = call(r, auth)
    assert response.status_code == 404 and "No valid deployments" in response.json()["message"]
    assert call(r, auth, "/endpoints/nope/score").status_code == 404
    assert call(r, auth, "/elsewhere").status_code == 404


@pytest.mark.parametrize("down, expected", [({"b1:5001"}, "b2:5001"), ({"b1:5001", "b2:5001"}, None)])
def test_an_instance_going_away_is_skipped(down, expected):
    r = router(traffic={"blue": 100}, down=down)
    response = call(r, {"Authorization": "Bearer k1"})
    if expected:
        assert response.status_code == 200 and response.text == expected
    else:
        assert response.status_code == 503


def test_a_bug_gives_a_generic_500_without_the_exception(caplog):
    r = router(traffic={"blue": 100})

    async def broken(*args):
        raise RuntimeError("<object at 0xdeadbeef>")
    r.pool.request = broken
    response = call(r, {"Authorization": "Bearer k1"})
    assert response.status_code == 500 and set(response.json()) == {"message"}
    assert "deadbeef" not in response.text and "RuntimeError" not in response.text
    assert "deadbeef" in caplog.text


def test_mirror_traffic_sends_a_copy_and_answers_from_live():
    r = router(traffic={"blue": 100}, draws=(0.0, 0.1))
    route = r.routes["ep"]
    r.routes["ep"] = table.Endpoint(route.key, route.name, route.auth_mode, route.keys, route.traffic,
                                    {"green": 50}, route.deployments)

    async def go():
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=r), base_url="http://router") as client:
            response = await client.post("/endpoints/ep/score", json={}, headers={"Authorization": "Bearer k1"})
            await asyncio.gather(*r._mirrors)
            return response
    response = asyncio.run(go())
    assert response.headers["azureml-model-deployment"] == "blue"
    assert sorted(r.pool.calls) == ["b1:5001", "g1:5001"]


def test_a_change_the_api_marked_is_read_before_the_next_request(tmp_path, monkeypatch):
    """Traffic moved (PUT answered): the very next request follows it, not the next periodic refresh."""
    r = router(traffic={"blue": 100})
    r.settings = Settings(data_dir=tmp_path, scoring_refresh_seconds=3600)
    auth = {"Authorization": "Bearer k1"}
    assert call(r, auth).text.startswith("b")
    moved = {"ep": table.Endpoint(KEY, "ep", "Key", ("k1", "k2"), {"blue": 0, "green": 100}, {},
                                  r.routes["ep"].deployments)}
    monkeypatch.setattr(table, "load", lambda store, secret: moved)
    r._refreshed = 0.0  # as a router that read the store long ago
    changes.mark_changed(r.settings.routes_changed)
    assert [call(r, auth).text for _ in range(3)] == ["g1:5001"] * 3


def test_a_body_over_the_limit_is_refused_with_413_naming_it():
    r = router(traffic={"blue": 100})
    r.settings = Settings(scoring_max_request_bytes=1000)
    auth = {"Authorization": "Bearer k1"}

    async def chunked():  # no Content-Length: counted as it arrives
        for _ in range(3):
            yield b"x" * 400

    async def go():
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=r), base_url="http://router") as client:
            announced = await client.post("/endpoints/ep/score", content=b"x" * 1001, headers=auth)
            streamed = await client.post("/endpoints/ep/score", content=chunked(), headers=auth)
            at_limit = await client.post("/endpoints/ep/score", content=b"x" * 1000, headers=auth)
            return announced, streamed, at_limit
    announced, streamed, at_limit = asyncio.run(go())
    for refused in (announced, streamed):
        assert refused.status_code == 413
        assert "1000 bytes" in refused.json()["message"]
        assert "AMLEMU_SCORING_MAX_REQUEST_BYTES" in refused.json()["message"]
    assert at_limit.status_code == 200
    assert r.pool.calls == ["b1:5001"]  # nothing refused reached an instance


def test_mirrored_copies_in_flight_are_bounded_and_the_rest_dropped_and_counted():
    r = router(traffic={"blue": 100}, draws=(0.0, 0.1))
    r.settings = Settings(scoring_max_mirrors=2)
    route = r.routes["ep"]
    r.routes["ep"] = table.Endpoint(route.key, route.name, route.auth_mode, route.keys, route.traffic,
                                    {"green": 50}, route.deployments)
    live_pool, released = r.pool, asyncio.Event()

    class SlowShadow(FakePool):  # the mirrored deployment answers only once released
        async def request(self, address, method, path, headers, body, timeout, cluster=None):
            if address.startswith("g"):
                self.calls.append(address)
                await released.wait()
                return forward.Response(200, {}, b"")
            return await live_pool.request(address, method, path, headers, body, timeout)

    async def go():
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=r), base_url="http://router") as client:
            answers = [await client.post("/endpoints/ep/score", json={}, headers={"Authorization": "Bearer k1"})
                       for _ in range(5)]
            in_flight = len(r._mirrors)
            released.set()
            await asyncio.gather(*r._mirrors)
            return answers, in_flight
    r.pool = SlowShadow()
    answers, in_flight = asyncio.run(go())
    assert [a.status_code for a in answers] == [200] * 5  # live traffic never waits for, nor fails by, mirrors
    assert in_flight == 2 and r.pool.calls == ["g1:5001", "g1:5001"]
    assert r.mirrors_dropped == 3
    assert live_pool.calls == ["b1:5001", "b2:5001"] * 2 + ["b1:5001"]


def test_metrics_count_requests_latency_and_errors_per_deployment_behind_the_management_token():
    r = router(down={"g1:5001"})
    key = {"Authorization": "Bearer k1"}
    for pinned in ("blue", "blue", "green", "empty"):
        call(r, {**key, "azureml-model-deployment": pinned})

    def metrics(headers):
        async def go():
            async with httpx.AsyncClient(transport=httpx.ASGITransport(app=r), base_url="http://router") as client:
                return await client.get("/metrics", headers=headers)
        return asyncio.run(go())
    assert metrics({}).status_code == 401 and metrics(key).status_code == 401  # an endpoint key is not enough
    answer = metrics({"Authorization": f"Bearer {tokens.issue(SECRET, 'https://localhost:8443')[0]}"})
    assert answer.status_code == 200 and answer.headers["content-type"].startswith("text/plain")
    text = answer.text
    assert 'amlemu_scoring_requests_total{code="200",deployment="blue",endpoint="ep"} 2.0' in text
    assert 'amlemu_scoring_requests_total{code="503",deployment="green",endpoint="ep"} 1.0' in text
    assert 'amlemu_scoring_errors_total{deployment="green",endpoint="ep"} 1.0' in text
    assert 'amlemu_scoring_errors_total{deployment="empty",endpoint="ep"} 1.0' in text  # no ready instance
    assert 'amlemu_scoring_request_duration_seconds_count{deployment="blue",endpoint="ep"} 2.0' in text


def test_a_refusal_tried_again_on_a_newer_table_is_counted_once(tmp_path, monkeypatch):
    r = router()
    r.settings = Settings(data_dir=tmp_path, scoring_refresh_seconds=3600)
    monkeypatch.setattr(table, "load", lambda store, secret: r.routes)  # the newer table: still no instance
    r._refreshed = 0.0  # so the refusal is tried again on a table read after the request came
    assert call(r, {"Authorization": "Bearer k1", "azureml-model-deployment": "empty"}).status_code == 503
    requests = r.metrics.requests.labels("ep", "empty", "503")._value.get()
    assert requests == 1 and r.metrics.latency.labels("ep", "empty")._sum.get() >= 0


def test_an_aad_token_holding_one_workspace_scores_there_only():
    aad = router("AADToken")
    workspace = KEY.rsplit("/onlineendpoints/", 1)[0]
    for scope, status in ((workspace, 200), (workspace + "-other", 401), ("/", 200)):
        scoped = tokens.issue_for_role(SECRET, "https://ml.azure.com", "alice", "AzureML Data Scientist", scope)[0]
        assert call(aad, {"Authorization": f"Bearer {scoped}"}).status_code == status, scope
