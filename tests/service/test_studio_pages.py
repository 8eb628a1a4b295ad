"""The Studio's pages: a session opened with the management token (`amlemu studio`), pages over what the store holds,
their own 404 and 401 pages, and a cookie that opens pages and changes nothing."""

import asyncio
import json
from pathlib import Path
from types import SimpleNamespace
from urllib.parse import unquote, urlsplit

import pytest

from emulator import tokens
from emulator.api import studio_pages
from emulator.domain.ids import WorkspaceRef
from emulator.domain.jobs import artifacts
from tests.service.test_api import API, SUB, WS_PATH, add_nodes
from tests.service.test_jobs import JOBS, job_body, put_job, ready  # noqa: F401 (`ready`: a fixture)

pytestmark = pytest.mark.usefixtures("ready")
STUDIO = f"/studio{WS_PATH}"


def _login(client, auth) -> None:
    answer = client.post("/_emulator/studio/session", headers=auth)
    assert answer.status_code == 200, answer.text
    link = urlsplit(answer.json()["loginUrl"])
    opened = client.get(f"{link.path}?{link.query}", follow_redirects=False)
    assert opened.status_code == 303 and opened.headers["location"] == "/studio"


def test_a_session_comes_from_a_one_time_link_and_sets_a_strict_cookie(client, auth):
    assert client.post("/_emulator/studio/session").status_code == 401  # the CLI's token, not a browser's cookie
    link = urlsplit(client.post("/_emulator/studio/session", headers=auth).json()["loginUrl"])
    assert link.path == "/studio/login"
    opened = client.get(f"{link.path}?{link.query}", follow_redirects=False)
    cookie = opened.headers["set-cookie"]
    assert cookie.startswith(f"{tokens.SESSION_COOKIE}=")
    assert all(flag in cookie for flag in ("HttpOnly", "Secure", "SameSite=strict", "Path=/studio", "Max-Age="))
    again = client.get(f"{link.path}?{link.query}", follow_redirects=False)  # used once already
    assert again.status_code == 401 and "amlemu studio" in again.text
    forged = client.get("/studio/login", params={"ticket": "9999999999.abc.0123"}, follow_redirects=False)
    assert forged.status_code == 401 and "set-cookie" not in forged.headers


def test_pages_need_a_session_and_say_how_to_get_one(client):
    for path in ("/studio", STUDIO, f"{STUDIO}/computes", f"{STUDIO}/jobs", f"{STUDIO}/endpoints"):
        page = client.get(path)
        assert page.status_code == 401 and page.headers["content-type"].startswith("text/html"), path
        assert "amlemu studio" in page.text
    client.cookies.set(tokens.SESSION_COOKIE, "1.forged.cookie", domain="localhost", path="/studio")
    assert client.get("/studio").status_code == 401


def test_the_pages_show_workspaces_computes_nodes_jobs_and_endpoints(client, auth, app):
    _login(client, auth)
    put_job(client, auth, "seen-job", job_body(displayName="<img src=x onerror=alert(1)>", tags={"team": "a&b"}))
    add_nodes(app, "cpu", "running", "preempted")
    assert "amlemu" in client.get("/studio").text
    computes = client.get(f"{STUDIO}/computes").text
    assert 'data-node="cpu-node-0" data-state="running"' in computes
    assert 'data-node="cpu-node-1" data-state="preempted"' in computes
    assert "cpu-node-1" in client.get(f"{STUDIO}/computes/cpu").text
    jobs = client.get(f"{STUDIO}/jobs").text
    assert 'data-job="seen-job"' in jobs and "<img src=x" not in jobs and "&lt;img src=x" in jobs
    assert "team=a&amp;b" in jobs
    assert client.get(f"{STUDIO}/endpoints").status_code == 200
    job = client.get(f"{STUDIO}/jobs/seen-job").text  # the session opens every job's page, no signature needed
    assert 'data-status="NotStarted"' in job and "No metrics logged yet." in job


def test_the_jobs_list_filters_by_status_experiment_compute_and_tag(client, auth):
    _login(client, auth)
    put_job(client, auth, "in-a", job_body(experimentName="a", tags={"k": "1"}))
    put_job(client, auth, "in-b", job_body(experimentName="b", tags={"k": "2"}))
    assert client.post(f"{JOBS}/in-b/cancel", params=API, headers=auth).status_code in (200, 202)

    def listed(**chosen) -> set[str]:
        html = client.get(f"{STUDIO}/jobs", params=chosen).text
        return {name for name in ("in-a", "in-b") if f'data-job="{name}"' in html}
    assert listed() == {"in-a", "in-b"}
    assert listed(experiment="a") == {"in-a"}
    assert listed(tag="k=2") == {"in-b"}
    assert listed(status="Canceled") == {"in-b"}
    assert listed(compute="cpu", status="NotStarted") == {"in-a"}
    assert listed(experiment="nope") == set()


@pytest.mark.parametrize("path", [
    "/studio/subscriptions/{sub}/resourceGroups/amlemu/providers/Microsoft.MachineLearningServices/workspaces/nope",
    "/studio/subscriptions/{sub}/resourceGroups/amlemu/providers/Microsoft.MachineLearningServices/workspaces/nope/jobs",
    STUDIO + "/jobs/no-such-job", STUDIO + "/computes/no-such-compute", STUDIO + "/onlineEndpoints/no-such-endpoint",
    STUDIO + "/batchEndpoints/no-such-endpoint", "/studio/no/such/page", STUDIO + "/jobs/x/file?path=a",
    STUDIO + "/timeline?subject=no-such-thing",
])
def test_unknown_ids_give_the_studios_404_page(client, auth, path):
    _login(client, auth)
    page = client.get(path.format(sub=SUB))
    assert page.status_code == 404 and page.headers["content-type"].startswith("text/html"), page.text
    assert 'data-status="404"' in page.text


def test_a_jobs_files_download_through_its_signed_link_and_stay_inside_its_folder(client, auth, settings):
    body = put_job(client, auth, "with-files", job_body())
    folder = Path(settings.data_dir) / artifacts.directory(WorkspaceRef(SUB, "amlemu", "amlemu"), "with-files")
    (folder / "outputs").mkdir(parents=True)
    (folder / "outputs" / "model.txt").write_text("<script>weights</script>")
    sig = urlsplit(body["properties"]["services"]["Studio"]["endpoint"]).query.split("sig=")[1].split("&")[0]
    page = client.get(f"{STUDIO}/jobs/with-files", params={"sig": sig}).text
    assert "file?path=outputs/model.txt&amp;sig=" in page
    got = client.get(f"{STUDIO}/jobs/with-files/file", params={"path": "outputs/model.txt", "sig": sig})
    assert got.status_code == 200 and got.content == b"<script>weights</script>"
    assert got.headers["content-type"] == "application/octet-stream" and "attachment" in got.headers["content-disposition"]
    assert client.get(f"{STUDIO}/jobs/with-files/file", params={"path": "outputs/model.txt"}).status_code == 401
    for escape in ("../../../../token.key", "/etc/passwd", "outputs/../../with-files/outputs/model.txt"):
        assert client.get(f"{STUDIO}/jobs/with-files/file", params={"path": escape, "sig": sig}).status_code == 404


def test_a_file_named_with_a_newline_a_quote_and_non_ascii_downloads_under_its_own_name(client, auth, settings):
    body = put_job(client, auth, "odd-names", job_body())
    name = 'r\u00e9sum\u00e9 "v2"\n\u65e5\u672c;%.txt'
    folder = Path(settings.data_dir) / artifacts.directory(WorkspaceRef(SUB, "amlemu", "amlemu"), "odd-names")
    (folder / "outputs").mkdir(parents=True)
    (folder / "outputs" / name).write_bytes(b"weights")
    sig = urlsplit(body["properties"]["services"]["Studio"]["endpoint"]).query.split("sig=")[1].split("&")[0]
    got = client.get(f"{STUDIO}/jobs/odd-names/file", params={"path": f"outputs/{name}", "sig": sig})
    assert got.status_code == 200 and got.content == b"weights"
    assert got.headers["content-disposition"] == (
        'attachment; filename="r_sum_ _v2____;_.txt"; '
        "filename*=UTF-8''r%C3%A9sum%C3%A9%20%22v2%22%0A%E6%97%A5%E6%9C%AC%3B%25.txt")
    assert unquote(got.headers["content-disposition"].split("UTF-8''")[1]) == name


def test_the_session_cookie_changes_nothing(client, auth):
    """Pages are GETs; every route that changes state wants the bearer token, whatever cookie comes with it."""
    _login(client, auth)
    put_job(client, auth, "kept", job_body())
    assert client.put(f"{JOBS}/other", params=API, json=job_body()).status_code == 401
    assert client.post(f"{JOBS}/kept/cancel", params=API).status_code == 401
    assert client.post("/_emulator/studio/session").status_code == 401
    assert client.delete(f"{WS_PATH}/computes/cpu", params=API).status_code == 401
    assert 'data-status="NotStarted"' in client.get(f"{STUDIO}/jobs/kept").text


def test_a_page_streams_its_live_part_once_per_change(app, client, auth):
    """The stream the page's EventSource reads: the live block at once, then only when it changed."""
    put_job(client, auth, "streamed", job_body())
    studio = app.state.context.services.studio
    ref = WorkspaceRef(SUB, "amlemu", "amlemu")

    class Browser:  # what the stream reads of the request; it leaves after four reads of the page
        headers = {"accept": "text/event-stream"}
        url = SimpleNamespace(path=f"{STUDIO}/jobs/streamed")
        polls = 0

        async def is_disconnected(self):
            self.polls += 1
            if self.polls == 3:  # the job changes between the second and third reads
                assert client.post(f"{JOBS}/streamed/cancel", params=API, headers=auth).status_code in (200, 202)
            return self.polls > 4

    async def events() -> list[str]:
        return [chunk async for chunk in studio_pages._stream(Browser(), "job.html",
                                                               lambda: {"page": studio.job(ref, "streamed")})]
    original, studio_pages.LIVE_SECONDS = studio_pages.LIVE_SECONDS, 0.01
    try:
        sent = asyncio.run(events())
    finally:
        studio_pages.LIVE_SECONDS = original
    assert sent[0].startswith("retry: ")
    live = [json.loads(chunk.split("data: ", 1)[1]) for chunk in sent if chunk.startswith("event: live")]
    assert len(live) == 2  # four reads, two versions of the page
    assert 'data-status="NotStarted"' in live[0]["html"] and 'data-status="Canceled"' in live[1]["html"]
    assert "<header>" not in live[0]["html"]  # the live part only, not the whole page


def test_discovery_points_the_studio_at_its_pages(client):
    assert client.get("/discovery").json()["studio"] == "https://localhost:8443/studio"


def test_the_timeline_shows_the_events_newest_first_and_the_cost_so_far(client, auth, app):
    """What the controller records (services/events.py) is what the page shows, of the workspace or of one compute."""
    from datetime import UTC, datetime, timedelta

    from emulator.domain import events as kinds
    from emulator.services import events

    _login(client, auth)
    ws = WorkspaceRef(SUB, "amlemu", "amlemu")
    cpu, start = f"{ws.key}/computes/cpu", datetime.now(UTC) - timedelta(hours=1)
    with app.state.context.store.transaction() as repo:
        events.record(repo, ws.key, kinds.NODE_ADDED, cpu, start, node="n1", vmSize="Standard_DS3_v2",
                      priority="LowPriority")
        events.record(repo, ws.key, kinds.NODE_NOTICE, cpu, start + timedelta(minutes=30), node="n1")
        events.record(repo, ws.key, kinds.NODE_PREEMPTED, cpu, start + timedelta(minutes=31), node="n1", job="j<b>")
        events.record(repo, ws.key, kinds.JOB_STATUS, f"{ws.key}/jobs/other", start, status="Queued")
    page = client.get(f"{STUDIO}/timeline")
    assert page.status_code == 200
    shown = [kind for kind in ("node.preempted", "node.notice", "node.added", "job.status")
             if f'data-kind="{kind}"' in page.text]
    assert shown == ["node.preempted", "node.notice", "node.added", "job.status"]
    order = [page.text.index(f'data-kind="{kind}"') for kind in ("node.preempted", "node.notice", "node.added")]
    assert order == sorted(order)  # newest first
    assert "job=j&lt;b&gt;" in page.text  # what a job's name holds is text
    one = client.get(f"{STUDIO}/timeline", params={"subject": "cpu"}).text
    assert 'data-kind="node.added"' in one and 'data-kind="job.status"' not in one
    # 31 minutes of a low-priority DS3 v2 in East US: $0.0586/h (cost.py)
    assert 'data-dollars="0.0303"' in one
