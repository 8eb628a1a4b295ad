"""Preemption with real node containers: the notice a job reads from its node's Scheduled Events, the
acknowledgement that ends the wait, the kill, and the job's next attempt on a fresh node."""

import uuid
from datetime import datetime

import pytest

from emulator.domain.compute.preemption import SHUTDOWN_GRACE_SECONDS
from emulator.services import preemption
from tests.integration.lab import now

NOTICE_READER = r"""
import json, os, signal, sys, threading, time, urllib.error, urllib.request
signal.signal(signal.SIGTERM, lambda *_: print("SIGTERM received", flush=True))
url = os.environ["AZUREML_EMU_IMDS_ENDPOINT"] + "/metadata/scheduledevents?api-version=2020-07-01"
if os.path.exists("outputs/first.txt"):
    print("second attempt; kept from the first:", open("outputs/first.txt").read())
    sys.exit(0)
open("outputs/first.txt", "w").write("written by attempt 1")
try:
    urllib.request.urlopen(url)
except urllib.error.HTTPError as exc:
    print("without the Metadata header:", exc.code)
print("waiting for a notice", flush=True)
deadline = time.monotonic() + 120
while time.monotonic() < deadline:  # poll as Azure's docs advise, with a deadline
    document = json.load(urllib.request.urlopen(urllib.request.Request(url, headers={"Metadata": "true"})))
    if document["Events"]:
        break
    threading.Event().wait(0.05)
else:
    sys.exit("no notice within 120 s")
print("notice:", json.dumps(document), flush=True)
event = document["Events"][0]["EventId"]
ack = json.dumps({"StartRequests": [{"EventId": event}]}).encode()
urllib.request.urlopen(urllib.request.Request(url, data=ack, headers={"Metadata": "true"}))
print("acknowledged", event, flush=True)
while True:  # the node is taken now: wait for the kill, whatever signals come first
    signal.pause()
print("never here")
"""


def _log(lab, name):
    path = lab.artifacts(name) / "user_logs" / "std_log.txt"
    return path.read_text() if path.exists() else ""


def _preempt(lab, compute="spot", node_id=None):
    with lab.store.transaction() as repo:
        row = repo.compute(lab.ref.child_id("computes", compute))
        return preemption.preempt(row, repo.nodes(row.key), node_id, str(uuid.uuid4()), now(), lab.settings).node_id


def _preempted_while_polling(lab, name: str, script: str, polling: str) -> str:
    """Run `script` on a one-node low-priority cluster, preempt its node once the log says `polling`, and wait
    for the node to show preempted; its id."""
    lab.cluster("spot", max_nodes=1, priority="LowPriority")
    lab.submit(name, "python main.py", lab.code({"main.py": script}), compute="spot")
    lab.wait(lambda: polling in _log(lab, name), 120, "the job to poll its node's IMDS")
    node_id = _preempt(lab)
    lab.wait(lambda: any(n.node_id == node_id and n.state == "preempted" for n in lab.nodes("spot")), 60,
             "the node to be preempted")
    return node_id


def test_an_acknowledged_notice_takes_the_node_and_the_job_reruns_on_a_fresh_one(lab):
    # Notice, acknowledgement, SIGTERM (which the job ignores), kill after the grace: the node shows preempted.
    first = _preempted_while_polling(lab, "job-spot", NOTICE_READER, "waiting for a notice")
    text = _log(lab, "job-spot")
    assert "without the Metadata header: 400" in text and "SIGTERM received" in text
    assert f'"Resources": ["{first}"]' in text and '"EventType": "Preempt"' in text and "acknowledged" in text
    job = lab.wait_status("job-spot", "Completed", timeout=120)
    assert job.attempt == 2 and "never here" not in _log(lab, "job-spot")
    assert "second attempt; kept from the first: written by attempt 1" in _log(lab, "job-spot")
    warnings = [h["warning"] for h in job.history if h.get("warning")]
    assert warnings == [f"Low priority compute preemption warning: node {first} was preempted during attempt 1."]
    requeued = [h for h in job.history if h["status"] == "Queued" and h["attempt"] == 2]
    assert requeued and "goes back to the queue" in requeued[0]["message"]
    # It ran again on a replacement node; the preempted one leaves the list after its keep time (scaled).
    assert [r["node"] for r in job.ranks.values()] != [first]
    lab.wait(lambda: first not in [n.node_id for n in lab.nodes("spot")], 60, "the preempted node to be dropped")
    lab.wait(lambda: not lab.job_containers(), 60, "no job container left")


TERM_THEN_QUIT = r"""
import os, signal, sys
def quit_on_term(*_):
    open("outputs/terminated.txt", "a").write("SIGTERM\n")
    sys.exit(143)
signal.signal(signal.SIGTERM, quit_on_term)
print("working", flush=True)
signal.pause()  # until SIGTERM: at NotBefore, as nobody acknowledges
"""


def test_a_job_that_chose_to_fail_fails_with_preemption_error_and_the_notice_runs_out_without_ack(lab):
    lab.cluster("spot", max_nodes=1, priority="LowPriority")
    lab.submit("job-fragile", "python main.py", lab.code({"main.py": TERM_THEN_QUIT}), compute="spot",
               properties={"amlemu.onPreemption": "fail"})
    lab.wait(lambda: "working" in _log(lab, "job-fragile"), 120, "the job to start")
    node_id = _preempt(lab)
    job = lab.wait_status("job-fragile", "Failed", timeout=60)
    assert job.error["code"] == "PreemptionError" and "pre-empted" in job.error["message"]
    assert (lab.artifacts("job-fragile") / "outputs" / "terminated.txt").read_text() == "SIGTERM\n"
    # Nobody acknowledged: the node goes at NotBefore (the notice is 30 s × the time scale).
    lab.wait(lambda: any(n.node_id == node_id and n.state == "preempted" for n in lab.nodes("spot")), 30,
             "the node to be taken at NotBefore")
    assert job.attempt == 1


POLL_ONLY = r"""
import json, os, sys, threading, urllib.request
url = os.environ["AZUREML_EMU_IMDS_ENDPOINT"] + "/metadata/scheduledevents?api-version=2020-07-01"
if os.path.exists("outputs/checkpoint.txt"):
    print("resumed from a checkpoint of", len(open("outputs/checkpoint.txt").read().split()), "lines")
    sys.exit(0)
print("working, polling the notice", flush=True)
while not json.load(urllib.request.urlopen(urllib.request.Request(url, headers={"Metadata": "true"})))["Events"]:
    threading.Event().wait(0.1)
print("notice seen: checkpointing", flush=True)
with open("outputs/checkpoint.tmp", "w") as f:  # a slow checkpoint: 2 s of writing, then a rename
    for line in range(20):
        f.write(f"{line}\n")
        f.flush()
        threading.Event().wait(0.1)
os.replace("outputs/checkpoint.tmp", "outputs/checkpoint.txt")
print("checkpoint saved", flush=True)
while True:  # carries on with its work (no signal handler, no acknowledgement) until the node goes
    threading.Event().wait(1)
"""


@pytest.mark.parametrize("time_scale", [0.2])  # the 30 s notice lasts 6 s here
def test_a_job_that_only_polls_the_notice_gets_no_signal_with_it_and_checkpoints_before_the_node_goes(lab):
    assert not lab.settings.signal_on_notice  # Azure's default: the notice is the only sign
    first = _preempted_while_polling(lab, "job-poller", POLL_ONLY, "working, polling the notice")
    # The 2 s checkpoint was finished whole: no SIGTERM came with the notice to cut it short.
    assert "checkpoint saved" in _log(lab, "job-poller")
    assert (lab.artifacts("job-poller") / "outputs" / "checkpoint.txt").read_text().split() == \
        [str(line) for line in range(20)]
    # Nobody acknowledged: the node was taken at NotBefore, SIGTERM ended the job, and the kill came at once
    # (its job had ended), well within the grace.
    (node,) = [n for n in lab.nodes("spot") if n.node_id == first]
    not_before, taken = (datetime.fromisoformat(node.notice[k]) for k in ("notBefore", "takenAt"))
    assert taken >= not_before and node.state_changed_at.replace(tzinfo=taken.tzinfo) >= taken
    assert (node.state_changed_at.replace(tzinfo=taken.tzinfo) - taken).total_seconds() < SHUTDOWN_GRACE_SECONDS
    job = lab.wait_status("job-poller", "Completed", timeout=120)
    assert job.attempt == 2 and "resumed from a checkpoint of 20 lines" in _log(lab, "job-poller")
