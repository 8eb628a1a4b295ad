"""The event timeline, the cost meter, budgets and /metrics over REST: token-protected, paged after an id, streamed
as server-sent events that resume from Last-Event-ID; bad input names its field."""

from datetime import UTC, datetime, timedelta

from emulator.services import events
from tests.service.test_api import API, COMPUTES, assert_arm_error
from tests.service.test_preemption_api import EMU, _cluster, _node


def _events(client, auth, **params) -> dict:
    response = client.get("/_emulator/events", params=params, headers=auth)
    assert response.status_code == 200, response.text
    return response.json()


def test_a_preemption_notice_is_on_the_timeline_once_paged_and_streamed_after_an_id(app, client, auth):
    key = _cluster(client, auth, "spot", "LowPriority")
    _node(app, key, "tvmps_busy_p")
    before = _events(client, auth)["last"] or 0
    assert client.post(f"{EMU}/spot/preempt", params=API, headers=auth).status_code == 202
    page = _events(client, auth, after=before, workspace="amlemu")
    (notice,) = page["value"]
    assert (notice["kind"], notice["subject"], notice["data"]["node"]) == ("node.notice", key, "tvmps_busy_p")
    assert notice["id"] == page["last"] and notice["time"].endswith("Z")
    assert _events(client, auth, after=notice["id"])["value"] == []
    newest = _events(client, auth, workspace="amlemu", limit=1, newest="true")  # where a follower starts
    assert newest["value"] == [notice] and newest["last"] == notice["id"]
    # by the workspace's ARM id too
    assert _events(client, auth, after=before, workspace=key.split("/computes/")[0])["value"] == [notice]

    with client.stream("GET", "/_emulator/events/stream", params={"follow": "false"},
                       headers={**auth, "Last-Event-ID": str(before)}) as stream:
        assert stream.headers["content-type"].startswith("text/event-stream")
        text = "".join(stream.iter_text())
    assert text.startswith(f"id: {notice['id']}\nevent: node.notice\ndata: {{") and text.endswith("\n\n")
    assert text.count("id: ") == 1


def test_the_timeline_refuses_without_a_token_and_names_an_unknown_workspace(client, auth):
    assert client.get("/_emulator/events").status_code == 401
    assert client.get("/_emulator/events/stream").status_code == 401
    assert client.get("/metrics").status_code == 401
    assert_arm_error(client.get("/_emulator/events", params={"workspace": "nope"}, headers=auth), 404,
                     "ResourceNotFound")
    assert_arm_error(client.get("/_emulator/events/stream", params={"workspace": "nope"}, headers=auth), 404,
                     "ResourceNotFound")
    assert client.get("/_emulator/events", params={"after": -1}, headers=auth).status_code in (400, 422)


def test_cost_prices_a_clusters_node_seconds_in_the_region_asked_and_a_budget_is_set(app, client, auth):
    key = _cluster(client, auth, "spot", "LowPriority")
    started = datetime.now(UTC) - timedelta(hours=1)
    with app.state.context.store.transaction() as repo:
        events.record(repo, key.split("/computes/")[0], "node.added", key, started, node="gone-node",
                      vmSize="Standard_DS3_v2", priority="LowPriority")
        events.record(repo, key.split("/computes/")[0], "node.preempted", key, started + timedelta(minutes=30),
                      node="gone-node")
    response = client.get("/_emulator/cost", params={"workspace": "amlemu", "region": "westeurope"}, headers=auth)
    assert response.status_code == 200, response.text
    (workspace,) = response.json()["value"]
    (line,) = workspace["computes"]
    assert (line["name"], line["priority"], line["seconds"]) == ("spot", "LowPriority", 1800.0)
    assert line["dollars"] == round(0.293 * 0.2 * 1.2 / 2, 6) == workspace["dollars"]
    assert line["dedicatedDollars"] == round(0.293 * 1.2 / 2, 6) and workspace["region"] == "westeurope"
    assert_arm_error(client.get("/_emulator/cost", params={"region": "mars"}, headers=auth), 400, target="region")

    response = client.put("/_emulator/budgets", json={"dollars": 5, "region": "eastus"}, headers=auth)
    assert response.status_code == 200 and response.json()["budget"]["dollars"] == 5.0
    assert client.get("/_emulator/cost", headers=auth).json()["value"][0]["budget"]["dollars"] == 5.0
    assert_arm_error(client.put("/_emulator/budgets", json={"dollars": -1}, headers=auth), 400, target="dollars")
    assert_arm_error(client.put("/_emulator/budgets", json=[], headers=auth), 400, target="dollars")


def test_metrics_count_nodes_jobs_preemptions_and_cost_at_scrape_time(app, client, auth):
    key = _cluster(client, auth, "spot", "LowPriority")
    _node(app, key, "tvmps_busy_p")
    now = datetime.now(UTC)
    with app.state.context.store.transaction() as repo:
        events.record(repo, key.split("/computes/")[0], "node.added", key, now - timedelta(minutes=1),
                      node="tvmps_busy_p", vmSize="Standard_DS3_v2", priority="LowPriority")
        events.record(repo, key.split("/computes/")[0], "node.preempted", key, now, node="other")
    response = client.get("/metrics", headers=auth)
    assert response.status_code == 200 and response.headers["content-type"].startswith("text/plain")
    text = response.text
    assert 'amlemu_nodes{cluster="spot",state="running",workspace="amlemu"} 1.0' in text
    assert 'amlemu_nodes{cluster="spot",state="idle",workspace="amlemu"} 0.0' in text
    assert 'amlemu_preemptions_total{cluster="spot",workspace="amlemu"} 1.0' in text
    assert '# TYPE amlemu_job_duration_seconds histogram' in text
    cost_line = next(line for line in text.splitlines() if line.startswith("amlemu_cost_dollars_total{"))
    assert 'compute="spot"' in cost_line and float(cost_line.rsplit(" ", 1)[1]) > 0
    assert client.get(f"{COMPUTES}/spot", params=API, headers=auth).status_code == 200  # nothing changed


def test_events_are_filtered_by_kind_and_by_subject_named_or_by_arm_id(app, client, auth):
    key = _cluster(client, auth, "spot", "LowPriority")
    _cluster(client, auth, "spot2", "LowPriority")
    now = datetime.now(UTC)
    workspace_key = key.split("/computes/")[0]
    with app.state.context.store.transaction() as repo:
        for subject, kind in ((key, "node.added"), (key + "2", "node.added"), (key, "node.up")):
            events.record(repo, workspace_key, kind, subject, now, node="n")
    assert [e["kind"] for e in _events(client, auth, workspace="amlemu", subject="spot")["value"]] == \
        ["node.added", "node.up"]  # not spot2's, whose key starts the same
    assert [e["subject"] for e in _events(client, auth, kind="node.added", subject=key.upper())["value"]] == [key]
    assert len(_events(client, auth, kind=["node.added", "node.up"])["value"]) == 3
    assert_arm_error(client.get("/_emulator/events", params={"subject": "spot"}, headers=auth), 400,
                     target="subject")
