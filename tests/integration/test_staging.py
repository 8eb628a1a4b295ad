"""Jobs sent ahead while every node is busy: their containers start at once and wait at their gate, and the
node that frees up first runs the job in the container already there, exactly once."""

import base64
import json
import threading

from emulator.controller.reconcilers.sandboxes import PER_NODE
from emulator.controller.specs.sandboxes import pool_of
from emulator.dispatch import protocol
from emulator.dispatch.celery_app import cluster_queue
from emulator.services import jobs
from tests import gate


def _log(lab, name: str) -> str:
    path = lab.artifacts(name) / "user_logs" / "std_log.txt"
    return path.read_text() if path.exists() else ""


def _containers_of(lab, name: str) -> list:
    return [c for c in lab.job_containers() if c.labels.get("amlemu.job-name") == name]


def _sandboxes(lab) -> list:
    return lab.runtime.list({"amlemu.stack": lab.settings.stack, "amlemu.role": "sandbox"})


def _busy_node_and_one_ahead(lab, holder: str, ahead: str, command: str):
    """One node running `holder` (waiting at its gate) and `ahead` sent after it: `ahead`'s started container."""
    lab.cluster(max_nodes=1)
    lab.submit(holder, gate.WAIT)
    lab.wait_status(holder, "Running")
    # The node's network sandboxes start as it comes up (its first job makes a namespace of its own).
    pool = protocol.sandbox_pool_key(pool_of(lab.settings, lab.ref.child_id("computes", "cpu")))
    lab.wait(lambda: len(lab.broker.smembers(pool)) == PER_NODE, 60, "the node's sandboxes")
    lab.submit(ahead, command)
    return lab.wait(lambda: next((c for c in _containers_of(lab, ahead) if c.running), None), 60,
                    f"the container of {ahead} started ahead")


def test_the_next_job_waits_started_at_its_gate_and_runs_when_the_node_frees(lab):
    staged = _busy_node_and_one_ahead(lab, "first", "second", "echo second ran on $(hostname); ls -a")
    # Started, but its command has not run: the job is Queued and its node (the only one) busy with the first.
    assert lab.job("second").status == "Queued" and "second ran" not in _log(lab, "second")
    assert [n.run_id for n in lab.nodes()] == ["first"]
    assert [c.id for c in _containers_of(lab, "second")] == [staged.id]
    gate.release(lab.artifacts("first") / "outputs")
    job = lab.wait_status("second", "Completed")
    assert [h["status"] for h in job.history][-4:] == ["Queued", "Running", "Finalizing", "Completed"]
    text = _log(lab, "second")
    assert text.count("second ran on") == 1 and ".amlemu-start" not in text, text  # its gate is gone
    assert lab.wait_status("first", "Completed").attempt == 1 and job.attempt == 1
    # It ran in the container started ahead (the node adopted it), which is gone now.
    lab.wait(lambda: not _containers_of(lab, "second"), 30, "the container to be removed")
    assert staged.name.endswith("-1-0")
    # Each ran in a network sandbox of the cluster's pool; with the cluster back at zero nodes, none is left.
    assert staged.labels.get("amlemu.sandbox", "").startswith(f"amlemu-{lab.settings.stack}-sandbox-")
    lab.wait(lambda: not lab.nodes(), 60, "the cluster to scale to zero")
    lab.wait(lambda: not _sandboxes(lab), 20, "its sandboxes to go")


def test_a_job_cancelled_while_waiting_ahead_loses_its_container(lab):
    _busy_node_and_one_ahead(lab, "busy", "ahead", "echo should never run")
    with lab.store.transaction() as repo:
        jobs.cancel(repo, lab.ref, "ahead", lab.controller.clock())
    lab.wait_status("ahead", "Canceled")
    lab.wait(lambda: not _containers_of(lab, "ahead"), 30, "the cancelled job's container to go")
    gate.release(lab.artifacts("busy") / "outputs")
    lab.wait_status("busy", "Completed")
    assert "should never run" not in _log(lab, "ahead")


def test_a_container_started_ahead_that_died_is_started_again_by_the_node(lab):
    staged = _busy_node_and_one_ahead(lab, "holder", "victim", "echo victim ran")
    lab.runtime.remove(staged.id)  # killed from outside before any node took the job
    gate.release(lab.artifacts("holder") / "outputs")
    job = lab.wait_status("victim", "Completed")
    assert job.attempt == 1 and _log(lab, "victim").count("victim ran") == 1


def _queued_copies(lab, name: str) -> int:
    """Messages in the cluster's Celery queue for job `name` (a kombu Redis message: its body is base64 JSON)."""
    queue = cluster_queue(lab.ref.child_id("computes", "cpu"))
    bodies = (json.loads(base64.b64decode(json.loads(raw)["body"])) for raw in lab.broker.lrange(queue, 0, -1))
    return sum(args[0]["job_name"] == name for args, _kwargs, _embed in bodies)


def test_a_node_lost_while_a_job_waits_ahead_has_its_rank_sent_again(lab):
    # A node that dies may have taken a waiting rank from the queue without claiming it: it is sent again at once.
    _busy_node_and_one_ahead(lab, "held", "waiting", "echo waiting ran")
    assert _queued_copies(lab, "waiting") == 1
    (node,) = lab.nodes()
    lab.runtime.signal(node.container_id, "SIGKILL")
    lab.wait(lambda: _queued_copies(lab, "waiting") == 2, 30, "the waiting rank to be sent again")
    job = lab.wait_status("waiting", "Completed")
    assert job.attempt == 1 and _log(lab, "waiting").count("waiting ran") == 1
    assert lab.wait_status("held", "Queued", "Running").attempt == 2  # the job it ran is back in the queue
    gate.release(lab.artifacts("held") / "outputs")
    lab.wait_status("held", "Completed")


def test_a_stream_of_short_jobs_runs_in_the_pools_sandboxes_and_the_pool_holds_steady(lab):
    """Every job borrows a sandbox of the pool and gives it back as its container goes; the pool neither
    shrinks nor grows meanwhile (sandboxes taken for dead or counted twice while starting made it churn,
    and jobs then made namespaces of their own: the engine's costliest step)."""
    lab.cluster(max_nodes=2, idle="PT30M")
    for name in ("warm-a", "warm-b"):
        lab.submit(name, gate.WAIT)
    lab.wait(lambda: len([n for n in lab.nodes() if n.run_id]) == 2, message="both nodes to run a job")
    for name in ("warm-a", "warm-b"):
        gate.release(lab.artifacts(name) / "outputs")
        lab.wait_status(name, "Completed")
    full = PER_NODE * 2
    lab.wait(lambda: len([s for s in _sandboxes(lab) if s.running]) == full, 60, f"{full} sandboxes")
    created: list[dict] = []
    events = lab.runtime.client.events(decode=True, filters={
        "type": "container", "event": "create", "label": f"amlemu.stack={lab.settings.stack}"})
    reader = threading.Thread(target=lambda: created.extend(e["Actor"]["Attributes"] for e in events), daemon=True)
    reader.start()
    names = [f"short-{i}" for i in range(12)]
    for name in names:
        lab.submit(name, "sleep 0.3")
    for name in names:
        lab.wait_status(name, "Completed")
    events.close()
    reader.join(10)
    job_containers = [c for c in created if c.get("amlemu.role") == "job"]
    assert len(job_containers) == len(names)
    assert all(c.get("amlemu.sandbox") for c in job_containers), job_containers
    assert [c for c in created if c.get("amlemu.role") == "sandbox"] == []
    assert len([s for s in _sandboxes(lab) if s.running]) == full
