"""What the platform recorded of a preemption, read the way a user reads it: the event timeline (paged and
streamed), Prometheus' /metrics, and `amlemu cost`. Called by the preemption test once its job has completed."""

import json

from typer.testing import CliRunner

from emulator.cli.main import app


def events_of(rest, workspace: str, subjects: set[str]) -> list[dict]:
    """Every event of the workspace about these subjects (ARM keys), page after page."""
    found, after = [], 0
    while True:
        response = rest.get("/_emulator/events", params={"workspace": workspace, "after": after})
        assert response.status_code == 200, response.text
        page = response.json()
        found += [e for e in page["value"] if e["subject"] in subjects]
        if not page["value"]:
            return found
        after = page["last"]


def check_preemption_recorded(rest, workspace_path: str, workspace: str, cluster: str, job: str, node: str) -> None:
    cluster_key, job_key = f"{workspace_path}/computes/{cluster}".lower(), f"{workspace_path}/jobs/{job}".lower()
    seen = events_of(rest, workspace, {cluster_key, job_key})
    about_node = [e["kind"] for e in seen if e["data"].get("node") == node and e["kind"].startswith("node.")]
    assert about_node.count("node.notice") == 1 and about_node.count("node.preempted") == 1, about_node
    assert about_node.index("node.notice") < about_node.index("node.preempted"), about_node
    requeued = [e["data"] for e in seen if e["kind"] == "job.requeued"]
    assert len(requeued) == 1 and requeued[0]["attempt"] == 2 and requeued[0]["preempted"], requeued
    attempts = [(e["data"]["attempt"], e["data"]["node"]) for e in seen if e["kind"] == "job.attempt"]
    assert attempts[0] == (1, node) and attempts[1][0] == 2 and attempts[1][1] != node, attempts
    assert [e["data"]["status"] for e in seen if e["kind"] == "job.status"][-1] == "Completed"

    # The same events on the live stream, resumed after the notice (Last-Event-ID), as a browser reconnects.
    notice = next(e for e in seen if e["kind"] == "node.notice")
    with rest.stream("GET", "/_emulator/events/stream", params={"workspace": workspace, "follow": "false"},
                     headers={"Last-Event-ID": str(notice["id"])}) as stream:
        frames = [line for line in stream.iter_lines() if line.startswith("data: ")]
    streamed = [json.loads(line[6:]) for line in frames]
    assert all(e["id"] > notice["id"] for e in streamed)
    assert [e["id"] for e in streamed if e["kind"] == "node.preempted" and e["data"]["node"] == node] == \
        [e["id"] for e in seen if e["kind"] == "node.preempted"]

    metrics = rest.get("/metrics")
    assert metrics.status_code == 200, metrics.text
    lines = metrics.text.splitlines()
    assert f'amlemu_preemptions_total{{cluster="{cluster}",workspace="{workspace}"}} 1.0' in lines, \
        [line for line in lines if "preemption" in line]
    assert any(line.startswith(f'amlemu_nodes{{cluster="{cluster}",state="running"') for line in lines)
    assert any(line.startswith("amlemu_job_duration_seconds_bucket{") for line in lines)

    result = CliRunner().invoke(app, ["cost", "--workspace", workspace, "--json"])
    assert result.exit_code == 0, result.output
    (report,) = json.loads(result.output)
    (line,) = [c for c in report["computes"] if c["name"] == cluster]
    assert line["priority"] == "LowPriority" and line["seconds"] > 0 and line["dollars"] > 0, line
    assert line["dedicatedDollars"] > line["dollars"]
    (spent,) = [j for j in report["jobs"] if j["name"] == job]
    assert 0 < spent["dollars"] <= line["dollars"]
    table = CliRunner().invoke(app, ["cost", "--workspace", workspace], env={"COLUMNS": "200"})
    assert table.exit_code == 0 and cluster in table.output and "total: $" in table.output, table.output
