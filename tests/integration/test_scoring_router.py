"""The scoring router against real model servers: keys, the deployment header, a 90/10 split over 1,000
requests, round robin over instances, and a stepped blue-to-green traffic shift under load with no failure."""

import asyncio
import collections
from datetime import UTC, datetime

import httpx
import pytest

from emulator import tokens
from emulator.scoring.app import Router
from emulator.services import endpoints
from emulator.store.db import Store
from tests.integration.test_endpoints_controller import deploy, wait_state

WHO = """
import json, os, socket

def init():
    pass

def run(raw_data):
    return {"deployment": os.environ["COLOR"], "host": socket.gethostname()}
"""
URL = "http://router/endpoints/ep-split/score"


@pytest.fixture
def scoring_network(lab, runtime):
    yield
    for container in runtime.list({"amlemu.stack": lab.settings.stack}):
        runtime.remove(container.id)
    runtime.remove_network(lab.settings.scoring_network(lab.ref.key))


def set_traffic(lab, traffic: dict, mirror: dict | None = None) -> None:
    with lab.store.transaction() as repo:
        endpoints.put_endpoint(repo, lab.ref, repo.workspace(lab.ref.key), "ep-split",
                               {"properties": {"authMode": "Key", "traffic": traffic, "mirrorTraffic": mirror or {}}},
                               datetime.now(UTC))


def _scored(lab, deployment: str) -> int:
    """Requests a deployment's servers have answered, from their access logs."""
    folder = endpoints.logs_dir(lab.settings, "ep-split", deployment)
    return sum(f.read_text(errors="replace").count('"POST /score') for f in folder.glob("amlemu-*.log"))


def test_keys_header_split_round_robin_and_a_shift_under_load(lab, scoring_network):
    deploy(lab, "ep-split", "blue", WHO, capacity=2, environmentVariables={"COLOR": "blue"})
    deploy(lab, "ep-split", "green", WHO, capacity=1, environmentVariables={"COLOR": "green"})
    wait_state(lab, "ep-split", "blue", "Succeeded")
    wait_state(lab, "ep-split", "green", "Succeeded")
    set_traffic(lab, {"blue": 90, "green": 10})
    with lab.store.transaction() as repo:
        key = endpoints.keys(repo, lab.ref, "ep-split")["primaryKey"]
    asyncio.run(_drive(lab, key))


async def _drive(lab, key: str) -> None:
    router = Router(lab.settings, Store(lab.settings.db_url), tokens.load_secret(lab.settings.data_dir / "token.key"))
    await router.start()
    auth = {"Authorization": f"Bearer {key}"}
    try:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=router), timeout=30) as client:
            assert (await client.post(URL, json={})).status_code == 401
            assert (await client.post(URL, json={}, headers={"Authorization": "Bearer wrong"})).status_code == 401
            unknown = await client.post(URL, json={}, headers={**auth, "azureml-model-deployment": "red"})
            assert unknown.status_code == 404 and "'red'" in unknown.json()["message"]
            missing = await client.post("http://router/endpoints/nope/score", json={}, headers=auth)
            assert missing.status_code == 404
            pinned = await client.post(URL, json={}, headers={**auth, "azureml-model-deployment": "green"})
            assert pinned.status_code == 200 and pinned.json()["deployment"] == "green"
            assert pinned.headers["azureml-model-deployment"] == "green"

            async def one() -> dict:
                response = await client.post(URL, json={"data": [1]}, headers=auth)
                assert response.status_code == 200, response.text
                return response.json()
            answers = []
            for _ in range(20):  # 1,000 requests, 50 at a time
                answers += await asyncio.gather(*(one() for _ in range(50)))
            share = collections.Counter(a["deployment"] for a in answers)
            # drawn at random per request: 50 either way of 100 is over 5 spreads (test_online_endpoints_sdk.py)
            assert abs(share["green"] - 100) <= 50, share
            blue_hosts = collections.Counter(a["host"] for a in answers if a["deployment"] == "blue")
            assert len(blue_hosts) == 2 and min(blue_hosts.values()) > 0.4 * share["blue"], blue_hosts

            # Blue to green in steps while a client keeps sending: no request fails.
            failures, done = [], asyncio.Event()

            async def load() -> int:
                sent = 0
                while not done.is_set():
                    response = await client.post(URL, json={"data": [1]}, headers=auth)
                    if response.status_code != 200:
                        failures.append(response.text)
                    sent += 1
                return sent
            senders = [asyncio.create_task(load()) for _ in range(4)]
            for blue in (70, 40, 10, 0):
                await asyncio.to_thread(set_traffic, lab, {"blue": blue, "green": 100 - blue})
                await router.refresh()
            done.set()
            sent = sum(await asyncio.gather(*senders))
            assert failures == [] and sent > 0
            after = await asyncio.gather(*(one() for _ in range(20)))
            assert {a["deployment"] for a in after} == {"green"}

            # Mirror traffic: blue answers everything, half the requests are copied to green.
            await asyncio.to_thread(set_traffic, lab, {"blue": 100}, {"green": 50})
            await router.refresh()
            before = _scored(lab, "green")
            mirrored = [await one() for _ in range(200)]
            assert {a["deployment"] for a in mirrored} == {"blue"}
            await asyncio.gather(*router._mirrors)
            assert 70 <= _scored(lab, "green") - before <= 130
    finally:
        await router.stop()


def test_an_update_rolls_to_new_containers_under_load(lab, scoring_network):
    deploy(lab, "ep-split", "blue", WHO, capacity=2, environmentVariables={"COLOR": "old"})
    wait_state(lab, "ep-split", "blue", "Succeeded")
    set_traffic(lab, {"blue": 100})
    with lab.store.transaction() as repo:
        key = endpoints.keys(repo, lab.ref, "ep-split")["primaryKey"]
        row = repo.online_deployment(lab.ref.child_id("onlineEndpoints", "ep-split") + "/deployments/blue")
        body = {k: v for k, v in row.body.items() if k != "refs"}
    old = {c.name for c in lab.runtime.list({"amlemu.stack": lab.settings.stack, "amlemu.role": "model-server"})}
    body["properties"] = {**body["properties"], "environmentVariables": {"COLOR": "new"}}
    with lab.store.transaction() as repo:
        endpoints.put_deployment(repo, lab.settings, lab.ref, "ep-split", "blue", body, datetime.now(UTC))
    colors = asyncio.run(_roll(lab, key))
    assert colors["failures"] == [] and colors["new"] > 0 and colors["old"] > 0
    now = {c.name for c in lab.runtime.list({"amlemu.stack": lab.settings.stack, "amlemu.role": "model-server"})}
    assert len(now) == 2 and not now & old


async def _roll(lab, key: str) -> dict:
    """Send requests through the router while the controller replaces blue's containers (ticked in a thread)."""
    router = Router(lab.settings, Store(lab.settings.db_url), tokens.load_secret(lab.settings.data_dir / "token.key"))
    await router.start()
    seen = collections.Counter()
    failures = []
    rolled = asyncio.create_task(asyncio.to_thread(wait_state, lab, "ep-split", "blue", "Succeeded"))
    try:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=router), timeout=30) as client:
            while not rolled.done() or seen["new"] < 20:
                response = await client.post(URL, json={}, headers={"Authorization": f"Bearer {key}"})
                if response.status_code == 200:
                    seen[response.json()["deployment"]] += 1
                else:
                    failures.append(response.text)
        await rolled
    finally:
        await router.stop()
    return {**seen, "failures": failures}
