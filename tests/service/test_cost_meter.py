"""The cost meter of compute instances and of jobs: an instance's VM is billed from when it is asked for until it is
stopped (its events recorded with the change of state), and what it cost shows in `/_emulator/cost`, /metrics and
on the Studio compute page; a job's node-seconds and dollars show on its Studio page (a parent's: its children's)."""

from datetime import UTC, datetime, timedelta

import pytest

from emulator.domain import events as kinds
from emulator.domain.compute import instance
from emulator.services import events, instances
from tests.service.test_api import API, COMPUTES
from tests.service.test_instances import act, put_ci
from tests.service.test_jobs import JOBS, job_body, put_job, ready  # noqa: F401 (`ready`: a fixture)
from tests.service.test_studio_pages import STUDIO, _login

pytestmark = pytest.mark.usefixtures("ready")
DS3_PER_HOUR = 0.293  # East US, Linux, pay as you go (domain/compute/cost.py)


def _settle(app, name: str) -> None:
    """Finish the operation in progress as the controller does (controller/reconcilers/instances.py, _finish)."""
    now = datetime.now(UTC)
    with app.state.context.store.transaction() as repo:
        row = repo.compute(f"{COMPUTES}/{name}".lower())
        state, done = instance.finish(instance.LastOperation.from_row(row.instance["lastOperation"]), True, now)
        instances.change(row, now, state=state.value, lastOperation=done.to_row())


def _events(client, auth, kind: str) -> list[dict]:
    response = client.get("/_emulator/events", params={"kind": kind, "workspace": "amlemu"}, headers=auth)
    assert response.status_code == 200, response.text
    return response.json()["value"]


def _line(client, auth, name: str) -> dict:
    (report,) = client.get("/_emulator/cost", params={"workspace": "amlemu"}, headers=auth).json()["value"]
    return next(line for line in report["computes"] if line["name"] == name)


def test_an_instance_is_billed_while_running_not_while_stopped_and_its_cost_shows(client, auth, app):
    put_ci(client, auth, "ws-ci")
    (started,) = _events(client, auth, kinds.INSTANCE_STARTED)  # asked for: billed from here, as Azure bills it
    assert started["subject"].endswith("/computes/ws-ci") and started["data"] == {
        "state": "Creating", "vmSize": "Standard_DS3_v2"}
    _settle(app, "ws-ci")  # Running: the same VM, nothing new to record
    assert act(client, auth, "stop", "ws-ci").status_code == 202
    assert _events(client, auth, kinds.INSTANCE_STOPPED) == []  # Stopping: still allocated
    _settle(app, "ws-ci")
    (stopped,) = _events(client, auth, kinds.INSTANCE_STOPPED)
    assert stopped["data"] == {"state": "Stopped"}
    ran = _line(client, auth, "ws-ci")
    assert ran["kind"] == "instance" and ran["priority"] == "Dedicated" and 0 < ran["seconds"] < 60

    later = _line(client, auth, "ws-ci")
    assert later["seconds"] == ran["seconds"]  # stopped: no more VM-seconds

    # an hour ago it ran half an hour: its cost is that half hour (and the moment it ran just now)
    key, hour_ago = started["subject"], datetime.now(UTC) - timedelta(hours=1)
    with app.state.context.store.transaction() as repo:
        events.record(repo, key.split("/computes/")[0], kinds.INSTANCE_STARTED, key, hour_ago,
                      vmSize="Standard_DS3_v2")
        events.record(repo, key.split("/computes/")[0], kinds.INSTANCE_STOPPED, key, hour_ago + timedelta(minutes=30))
    line = _line(client, auth, "ws-ci")
    assert line["seconds"] == pytest.approx(1800 + ran["seconds"], abs=0.01)
    assert line["dollars"] == pytest.approx(DS3_PER_HOUR / 2 + ran["dollars"], abs=1e-5)

    _login(client, auth)
    page = client.get(f"{STUDIO}/computes/ws-ci").text
    assert f'data-dollars="{line["dollars"]:.4f}"' in page and "seconds running at $0.2930/h" in page
    for timeline in (client.get(f"{STUDIO}/timeline"), client.get(f"{STUDIO}/timeline", params={"subject": "ws-ci"})):
        assert timeline.status_code == 200 and 'data-kind="instance.started"' in timeline.text, timeline.text[-2000:]
    metrics = client.get("/metrics", headers=auth).text
    assert any(row.startswith("amlemu_cost_dollars_total{") and 'compute="ws-ci"' in row and 'kind="instance"' in row
               for row in metrics.splitlines())

    assert act(client, auth, "start", "ws-ci").status_code == 202  # billed again from the start
    assert len(_events(client, auth, kinds.INSTANCE_STARTED)) == 3
    assert client.delete(f"{COMPUTES}/ws-ci", params=API, headers=auth).status_code == 202
    assert len(_events(client, auth, kinds.INSTANCE_STOPPED)) == 3  # Deleting: no VM billed any more


def _ran(app, name: str, minutes: float) -> None:
    """The job ran for `minutes`, an hour ago, as its status history says."""
    start = datetime.now(UTC) - timedelta(hours=1)
    with app.state.context.store.transaction() as repo:
        row = repo.job(f"{JOBS}/{name}".lower())
        row.history = [{"status": "Running", "time": start.isoformat()},
                       {"status": "Completed", "time": (start + timedelta(minutes=minutes)).isoformat()}]


def test_a_jobs_page_shows_its_node_seconds_and_dollars_and_a_parents_its_childrens(client, auth, app):
    _login(client, auth)
    for name in ("costly", "parent", "kid-a", "kid-b"):
        put_job(client, auth, name, job_body())
    assert 'class="cost"' not in client.get(f"{STUDIO}/jobs/costly").text  # not run yet: nothing to price
    _ran(app, "costly", 30)
    page = client.get(f"{STUDIO}/jobs/costly").text
    assert 'data-dollars="0.1465"' in page and "1800 node-seconds on cpu" in page

    _ran(app, "kid-a", 30)
    _ran(app, "kid-b", 60)
    with app.state.context.store.transaction() as repo:
        parent = repo.job(f"{JOBS}/parent".lower())
        parent.driver = {"graph": {}}
        for kid in ("kid-a", "kid-b"):
            repo.job(f"{JOBS}/{kid}".lower()).parent_key = parent.key
    page = client.get(f"{STUDIO}/jobs/parent").text
    assert f'data-dollars="{DS3_PER_HOUR * 1.5:.4f}"' in page and "5400 node-seconds on cpu (its child jobs')" in page
