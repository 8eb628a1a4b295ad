"""`amlemu demo preemption` end to end, against the e2e stack: it creates its low-priority cluster, runs the
checkpointing sample twice, preempts running nodes, ends by itself with a summary, and leaves nothing behind."""

import os
import re

import pytest
from typer.testing import CliRunner

from emulator.cli.main import app
from emulator.dispatch.celery_app import cluster_queue
from emulator.runtime.docker import DockerRuntime
from tests.waiting import wait_until

pytestmark = pytest.mark.e2e
API = {"api-version": "2023-08-01-preview"}


def _number(pattern: str, text: str) -> int:
    found = re.search(pattern, text)
    assert found, f"{pattern!r} not in the output:\n{text}"
    return int(found.group(1))


def test_demo_preempts_reruns_and_cleans_up(stack, rest, workspace_path):
    result = CliRunner().invoke(app, ["demo", "preemption", "--jobs", "2", "--nodes", "2", "--preemptions", "2"],
                                env={"COLUMNS": "200"})
    out = result.output
    print(out)  # the final view and the summary, shown with -rP or on a failure
    assert result.exit_code == 0, f"{out}\n{result.exception!r}"

    cluster = re.search(r"demo-spot-[0-9a-f]{4}", out).group(0)
    assert "jobs completed: 2/2" in out, out
    preemptions = _number(r"preemptions: (\d+)", out)
    attempts = _number(r"attempts: (\d+) in all", out)
    assert preemptions >= 1 and attempts >= 2 + 1, out  # a preempted job ran again
    assert "results: identical across the 2 jobs" in out, out
    assert f"deleted cluster {cluster}" in out, out
    assert re.search(r"\$0\.\d{4} on low-priority nodes; the same node-hours dedicated: \$0\.\d{4}, 80 % less", out), out

    # Its lines of what happened are the platform's events, followed on the timeline's stream: each one once, in the
    # order they were recorded, every preemption and rerun among them (the live view repeats the last few at the end).
    log = out.split("amlemu demo: ")[0]
    lines = [(int(m.group(3)), m.group(2), m.group(1)) for m in
             re.finditer(r"^ *[\d.]+ s  (.+?)  \[([a-z.]+) #(\d+)\]$", log, re.MULTILINE)]
    ids = [i for i, _, _ in lines]
    assert ids == sorted(set(ids)) and len(ids) >= 10, log
    kinds = [kind for _, kind, _ in lines]
    assert kinds.index("node.added") < kinds.index("node.up") < kinds.index("job.attempt") < kinds.index("node.preempted")
    assert kinds.count("node.preempted") >= 1 and kinds.count("job.requeued") >= 1, log
    assert sum(" Completed" in text for _, kind, text in lines if kind == "job.status") == 2, log
    recorded = {e["id"]: e for e in rest.get("/_emulator/events", params={"workspace": workspace_path,
                                                                             "after": ids[0] - 1}).json()["value"]}
    assert all(recorded[i]["kind"] == kind for i, kind, _ in lines)
    preempted = [i for i, e in recorded.items() if e["kind"] == "node.preempted" and cluster in e["subject"]]
    assert preempted == [i for i, kind, _ in lines if kind == "node.preempted"]

    # What the emulator recorded agrees with the summary: both jobs completed, the reruns are their attempts.
    jobs = [j for j in rest.get(f"{workspace_path}/jobs", params=API).json()["value"]
            if j["properties"].get("computeId", "").lower().endswith(f"/computes/{cluster}")]
    assert len(jobs) == 2
    histories = [rest.get(f"/_emulator{workspace_path}/jobs/{j['name']}/history").json() for j in jobs]
    assert [h["status"] for h in histories] == ["Completed", "Completed"]
    assert sum(h["attempt"] for h in histories) == attempts
    assert any("preemption" in e.get("message", "") for h in histories for e in h["history"])

    # Nothing of the demo is left: the cluster, its nodes and its jobs' containers at once (the delete returns
    # once its node containers are gone); the network sandboxes of its pool soon after.
    assert rest.get(f"{workspace_path}/computes/{cluster}", params=API).status_code == 404
    runtime, label = DockerRuntime(), os.environ["AMLEMU_STACK"]
    names = {j["name"] for j in jobs}
    assert runtime.list({"amlemu.stack": label, "amlemu.role": "node", "amlemu.compute": cluster}) == []
    assert [c.name for c in runtime.list({"amlemu.stack": label, "amlemu.role": "job"})
            if c.labels.get("amlemu.job-name") in names] == []
    pool = f"{label}.{cluster_queue(f'{workspace_path}/computes/{cluster}'.lower())}"

    def no_sandboxes_left() -> bool:
        left = runtime.list({"amlemu.stack": label, "amlemu.role": "sandbox", "amlemu.pool": pool})
        assert not left, [c.name for c in left]
        return True

    wait_until(no_sandboxes_left, timeout=60, interval=1, message=f"the sandboxes of {cluster} to go")
