"""The Studio's views of parents and endpoints: a pipeline's graph coloured by its steps' status, a named output's files
to download, a parallel job's mini-batch progress, an online endpoint's traffic and a batch endpoint's deployments."""

import asyncio
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest

from emulator import tokens
from emulator.domain.ids import WorkspaceRef
from emulator.domain.jobs import artifacts
from emulator.domain.storage import datastores
from emulator.scoring.app import Router
from emulator.store.db import Store
from tests.service.test_api import API, SUB
from tests.service.test_batch_endpoints import ENDPOINTS as BATCH
from tests.service.test_batch_endpoints import batch_ready, put  # noqa: F401 (`batch_ready`: a fixture)
from tests.service.test_batch_endpoints import deployment_body as batch_deployment
from tests.service.test_jobs import job_body, put_job, ready  # noqa: F401 (`ready`: a fixture)
from tests.service.test_online_endpoints import ENDPOINTS as ONLINE
from tests.service.test_online_endpoints import deployment_body, endpoint_body, setup_assets
from tests.service.test_pipeline_jobs import _controller_pass, components, pipeline_body  # noqa: F401 (a fixture)
from tests.service.test_studio_pages import STUDIO, _login

REF = WorkspaceRef(SUB, "amlemu", "amlemu")


@pytest.mark.usefixtures("ready", "components")
def test_a_pipelines_page_draws_its_steps_in_order_coloured_by_status(app, client, auth):
    _login(client, auth)
    put_job(client, auth, "pipe-1", pipeline_body())
    _controller_pass(app)  # prep is made; train waits for prep's output
    page = client.get(f"{STUDIO}/jobs/pipe-1").text
    assert '<svg class="graph"' in page
    assert 'data-step="prep" data-status="NotStarted"' in page and 'data-step="train" data-status="NotStarted"' in page
    assert page.count('class="edge"') == 1  # train reads prep
    assert page.index('data-step="prep"') < page.index('data-step="train"')
    assert "<h2>Child jobs</h2>" in page and 'data-child="' in page


@pytest.mark.usefixtures("ready")
def test_a_named_outputs_files_and_a_parallel_jobs_progress_are_on_its_page(client, auth, settings):
    body = put_job(client, auth, "made-files", job_body())
    out = settings.data_dir / artifacts.blob_dir(datastores.resolve_uri(
        REF, artifacts.output_uri("made-files", "model", {}), "model"))
    (out / "sub").mkdir(parents=True)
    (out / "sub" / "weights.bin").write_bytes(b"\x00\x01")
    logs = Path(settings.data_dir) / artifacts.directory(REF, "made-files") / "logs"
    logs.mkdir(parents=True)
    (logs / "job_progress_overview.txt").write_text("Total mini batches: 4\nProcessed mini batches: 3\n")
    link = urlsplit(body["properties"]["services"]["Studio"]["endpoint"])
    page = client.get(f"{link.path}?{link.query}").text
    assert "<h2>Output model</h2>" in page and "file?path=sub/weights.bin&amp;output=model&amp;sig=" in page
    assert "Mini-batch progress" in page and "Processed mini batches: 3" in page
    sig = link.query.split("sig=")[1].split("&")[0]
    got = client.get(f"{STUDIO}/jobs/made-files/file", params={"path": "sub/weights.bin", "output": "model", "sig": sig})
    assert got.status_code == 200 and got.content == b"\x00\x01"
    for output in ("nope", "../model"):
        missing = client.get(f"{STUDIO}/jobs/made-files/file", params={"path": "sub/weights.bin", "output": output,
                                                                         "sig": sig})
        assert missing.status_code == 404


def test_an_online_endpoints_page_shows_its_deployments_and_traffic(app, client, auth):
    setup_assets(app, client, auth)
    _login(client, auth)
    assert client.put(f"{ONLINE}/ep-web", params=API, headers=auth, json=endpoint_body()).status_code == 201
    for name in ("blue", "green"):
        made = client.put(f"{ONLINE}/ep-web/deployments/{name}", params=API, headers=auth, json=deployment_body())
        assert made.status_code == 201, made.text
    traffic = endpoint_body(traffic={"blue": 90, "green": 10})
    assert client.put(f"{ONLINE}/ep-web", params=API, headers=auth, json=traffic).status_code in (200, 201)
    page = client.get(f"{STUDIO}/onlineEndpoints/ep-web").text
    assert 'data-deployment="blue"' in page and 'data-deployment="green"' in page
    assert 'title="blue 90%"' in page and 'title="green 10%"' in page
    listed = client.get(f"{STUDIO}/endpoints").text
    assert "ep-web" in listed and "blue 90%" in listed


def test_an_online_endpoints_page_shows_each_deployments_recent_requests_latency_and_errors(app, client, auth):
    """Through the real scoring router, in this process: its counters, summarised once a second into the data folder,
    are what the page shows; "no data" once the router stops writing."""
    setup_assets(app, client, auth)
    _login(client, auth)
    assert client.put(f"{ONLINE}/ep-live", params=API, headers=auth, json=endpoint_body()).status_code == 201
    made = client.put(f"{ONLINE}/ep-live/deployments/blue", params=API, headers=auth, json=deployment_body())
    assert made.status_code == 201, made.text
    page = client.get(f"{STUDIO}/onlineEndpoints/ep-live").text
    assert "no data" in page and "the scoring router is not running" in page
    settings = app.state.context.settings
    key = client.post(f"{ONLINE}/ep-live/listKeys", params=API, headers=auth).json()["primaryKey"]
    pinned = {"Authorization": f"Bearer {key}", "azureml-model-deployment": "blue"}
    router = Router(settings, Store(settings.db_url), tokens.load_secret(settings.data_dir / "token.key"))
    moments = iter([100.0, 104.0])
    router.traffic.clock = lambda: next(moments)

    async def score() -> list[int]:
        await router.refresh()
        router.traffic.publish()  # the window opens
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=router), base_url="http://router") as scoring:
            answers = [await scoring.post("/endpoints/ep-live/score", json={}, headers=pinned) for _ in range(6)]
        router.traffic.publish()  # 4 s later
        return [answer.status_code for answer in answers]
    assert asyncio.run(score()) == [503] * 6  # the controller made no instance: no instance answers
    page = client.get(f"{STUDIO}/onlineEndpoints/ep-live").text
    assert 'data-rate="1.5"' in page and 'data-errors="6"' in page and " ms / " in page
    assert "over the last 10 s" in page
    summary = settings.scoring_traffic
    summary.write_text(summary.read_text().replace('"written": ', '"written": -1'))  # as a router stopped long ago
    assert "no data" in client.get(f"{STUDIO}/onlineEndpoints/ep-live").text


@pytest.mark.usefixtures("batch_ready")
def test_a_batch_endpoints_page_shows_its_deployments_and_no_jobs_yet(client, auth):
    _login(client, auth)
    put(client, auth, f"{BATCH}/scorer/deployments/dep-one", batch_deployment())
    page = client.get(f"{STUDIO}/batchEndpoints/scorer").text
    assert "<td>dep-one</td>" in page and "Not invoked yet." in page and "AppendRow" in page
    assert "scorer" in client.get(f"{STUDIO}/endpoints").text
