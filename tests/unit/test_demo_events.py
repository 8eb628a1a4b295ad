"""The demo's lines from the platform's events: each kind worded with the strips' short names, the events of other
clusters and jobs left out, and the frames of the server-sent-event stream read back into events."""

from emulator.cli.demo_events import describe, frames
from emulator.cli.demo_timeline import Timeline

WS = "/subscriptions/s/resourcegroups/rg/providers/microsoft.machinelearningservices/workspaces/w"
CLUSTER = f"{WS}/computes/demo-spot-1234"


def _line(tl: Timeline, kind: str, subject: str, **data) -> str | None:
    return describe({"id": 1, "kind": kind, "subject": subject, "data": data}, tl.node_label, tl.job_label)


def test_each_kind_is_worded_with_the_strips_names():
    tl = Timeline(0.0)
    tl.add_job(0.0, "Job-A")
    job = f"{WS}/jobs/job-a"
    assert _line(tl, "node.added", CLUSTER, node="tvmps_1", vmSize="Standard_DS3_v2") == "node n1 preparing"
    assert _line(tl, "node.up", CLUSTER, node="tvmps_1") == "node n1 idle"
    assert _line(tl, "job.attempt", job, attempt=1, rank=0, node="tvmps_1") == "node n1 running (#1)"
    assert _line(tl, "job.status", job, status="Running", attempt=1) == "job #1 Running"
    assert _line(tl, "node.notice", CLUSTER, node="tvmps_1", job="job-a") == "node n1 preemption notice (running #1)"
    assert _line(tl, "node.preempted", CLUSTER, node="tvmps_1", job="job-a") == "node n1 preempted (#1)"
    assert (_line(tl, "job.requeued", job, attempt=2, preempted=True)
            == "job #1 back in the queue after a preemption, as attempt 2")
    assert _line(tl, "job.status", job, status="Queued", attempt=2) == "job #1 Queued, attempt 2"
    assert _line(tl, "node.added", CLUSTER, node="tvmps_2") == "node n2 preparing"
    assert _line(tl, "job.attempt", job, attempt=2, rank=0, node="tvmps_2") == "node n2 running (#1, attempt 2)"
    assert _line(tl, "cluster.scaled", CLUSTER, previous=2, target=0) == "cluster target 2 -> 0 node(s)"
    assert _line(tl, "node.gone", CLUSTER, node="tvmps_2") == "node n2 gone"
    assert _line(tl, "job.status", f"{WS}/jobs/someone-elses", status="Running") is None


def test_frames_are_read_back_from_the_stream():
    lines = [": keepalive", "", "id: 7", "event: node.up", 'data: {"id":7,"kind":"node.up"}', "",
             "id: 8", "event: node.gone", 'data: {"id":8,"kind":"node.gone"}', ""]
    assert [e["id"] for e in frames(iter(lines))] == [7, 8]
