"""Jobs on an attached VM through the unmodified SDK (issue 23, points 1 and 5), on a stand-in host (tests/hosts.py):
a stack of its own whose api, Redis and controller also sit on the hosts' private network, at the addresses the stack
was started with (AMLEMU_NODE_API_URL, AMLEMU_ADVERTISED_REDIS_URL), as README tells a user to set them.

The SDK attaches the host as a VirtualMachineCompute (SSH address, port, user, key file); a command job runs on the
host's own engine (not the emulator's), reads its input, streams its log and writes an output that the SDK downloads.
A second job is running when the host is cut off the network: the job is back in the queue at once, its history
naming the node lost with the host (an attached VM's node is the emulator's own: Azure's listNodes lists AmlCompute
nodes only, and so does the emulator), and it stays there (the VM is its only machine) until the host is back; then
what the lost node left there is removed, a new node starts and the job's second attempt completes. The detach leaves the host as it was before the
attach (containers, networks, volumes, images) and nothing of the compute on the emulator's own engine."""

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import docker
import pytest

from emulator.cli.stack import ROOT, Stack, python_path
from emulator.domain.ids import WorkspaceRef
from emulator.domain.jobs import artifacts
from emulator.runtime import labels
from tests.e2e import stacks
from tests.hosts import StandInHost, StandInHosts, join_stack, stack_addresses, stack_env, stand_in_hosts
from tests.waiting import wait_until

pytestmark = pytest.mark.e2e
PROBE = Path(__file__).with_name("attached_vm_probe.py")
# From a host's cut to its job's requeue: the ping of the next pass goes unanswered for 8 s (runtime/hosts.py
# CONNECT_SECONDS) and the host is lost (controller/host_engines.py SILENT); a call in flight at the cut ends as soon
# (KEEPALIVE), then a fresh connection is tried for 8 s. Measured 8.2 s for the VM and 8.7 s for the pooled cluster, beside a run of the no-Docker tests (16.9
# and 16.4 s when a fresh connection was tried for 8 s more; 120 s when a call in flight waited out its read timeout).
LOST_WITHIN = 30
COMPUTE = "box"


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    with stand_in_hosts(tmp_path_factory.mktemp("hosts"), fixed_subnet=True) as made:
        yield made


@pytest.fixture(scope="module")
def remote_stack(lab: StandInHosts, tmp_path_factory):
    """The stack, started with the addresses its api and Redis will have on the hosts' network, then joined to it
    there (`docker network connect --ip`); the controller too, which reaches the hosts' SSH from there."""
    addresses = stack_addresses(lab)
    stack = stacks.compose_up(stacks.own_env(tmp_path_factory.mktemp("amlemu-home"), "vm", **stack_env(addresses)))
    try:
        join_stack(lab, stack.project, addresses)
        assert stack.wait_healthy(timeout=120), stack.compose("logs", capture=True).stdout[-5000:]
        yield stack
    finally:
        stacks.remove(stack)


def _probe(stack: Stack, *args: str) -> dict:
    env = {**os.environ, **stack.env_vars(), "PYTHONPATH": python_path(str(ROOT))}
    result = subprocess.run([sys.executable, str(PROBE), *args], capture_output=True, text=True, env=env,
                            cwd=ROOT, timeout=900)
    assert result.returncode == 0, result.stderr[-4000:] + stack.compose("logs", "controller",
                                                                         capture=True).stdout[-6000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


def _contents(host: StandInHost) -> dict[str, list[str]]:
    """Everything the host's engine holds: what a detach must leave as it was."""
    with host.engine() as engine:
        return {"containers": sorted(c.name for c in engine.containers.list(all=True)),
                "networks": sorted(n.name for n in engine.networks.list()),
                "volumes": sorted(v.name for v in engine.volumes.list()),
                "images": sorted(i.id for i in engine.images.list(all=True))}


def _started(engine: docker.DockerClient, job: str, since: float) -> int:
    """How many containers of `job` the engine started since then (its events, read back)."""
    events = engine.events(since=int(since), until=int(time.time()) + 1, decode=True,
                           filters={"type": "container", "event": "start", "label": f"{labels.JOB_NAME}={job}"})
    return sum(1 for _ in events)


def _owned(host: StandInHost, stack: Stack) -> list[tuple[str, str]]:
    """The containers the stack keeps on the host: (role, node) each."""
    with host.engine() as engine:
        return sorted((c.labels.get(labels.ROLE, ""), c.labels.get(labels.NODE, ""))
                      for c in engine.containers.list(all=True, filters={"label": f"{labels.STACK}={stack.label}"}))


class Arm:
    """The job's truth, read as often as a wait needs (the SDK probe reads it once per step)."""

    def __init__(self, stack: Stack):
        self.client, self.stack = stack.client(), stack
        self.workspace = (f"/subscriptions/{stack.subscription}/resourceGroups/{stack.resource_group}"
                          f"/providers/Microsoft.MachineLearningServices/workspaces/{stack.workspace}")

    def status(self, job: str) -> str:
        return self.client.get(f"{self.workspace}/jobs/{job}").json()["properties"]["status"]

    def history(self, job: str) -> dict:
        """Its attempt, and every status change with its attempt and reason (the emulator's own route)."""
        return self.client.get(f"/_emulator{self.workspace}/jobs/{job}/history").json()

    def log(self, job: str) -> str:
        ref = WorkspaceRef(self.stack.subscription, self.stack.resource_group, self.stack.workspace)
        path = self.stack.home / artifacts.directory(ref, job) / "user_logs" / "std_log.txt"
        return path.read_text() if path.exists() else ""


def test_jobs_on_an_attached_vm_run_there_survive_its_loss_and_the_detach_leaves_it_as_it_was(
        lab, remote_stack, tmp_path):
    stack, arm, local = remote_stack, Arm(remote_stack), docker.from_env()
    (host,) = lab.start(1)
    before, since = _contents(host), time.time() - 1

    seen = _probe(stack, "run", COMPUTE, str(tmp_path / "work"), host.address, host.username,
                  str(lab.keys.private_file))
    assert seen["attached"] == ["VirtualMachineCompute", "Succeeded"]
    first = seen["first"]
    assert seen["first_status"] == "Completed", seen["first_log"][-3000:]
    assert "on the host: hello from the workspace" in seen["first_log"], seen["first_log"][-3000:]
    assert "finished" in seen["first_log"]
    assert seen["first_output"] == "HELLO FROM THE WORKSPACE"
    assert "logged answer" in seen["first_log"] and seen["first_metrics"] == {"answer": 42}  # MLflow, from the host
    with host.engine() as engine:  # its container ran on the host's engine, none on the emulator's
        assert _started(engine, first, since) == 1
    assert _started(local, first, since) == 0

    # The second job runs on the host when the host is cut off the network.
    second = seen["second"]
    wait_until(lambda: "waiting to be cut off" in arm.log(second), timeout=300, interval=0.5,
               message="the second job's first attempt to be running on the host")
    assert arm.status(second) == "Running"
    owned = _owned(host, stack)  # its node, and the job's container there
    ((_, lost),) = [o for o in owned if o[0] == "node"]
    assert [o for o in owned if o[0] != "node"] == [("job", "")]
    lab.cut_off(host)
    wait_until(lambda: arm.status(second) == "Queued", timeout=LOST_WITHIN, interval=0.5,
               message="the job on the lost host to be back in the queue")
    history = arm.history(second)
    assert history["attempt"] == 2
    assert [h["status"] for h in history["history"] if f"Node {lost} was lost while running attempt 1" in
            (h.get("message") or "")] == ["Queued"], history
    # the SDK sees it so too; and no other machine can take the job: it waits for the host
    assert _probe(stack, "observe", second) == {"status": "Queued"}
    assert arm.status(second) == "Queued"

    host = lab.reconnect(host)  # at its own address: the attach names it
    done = _probe(stack, "finish", second, str(tmp_path / "work"))
    # the job's log as the workspace holds it (the SDK streams it only while the job runs: attempt 2 may be over by
    # the stream's first look)
    log = arm.log(second)
    assert done["status"] == "Completed", log[-3000:]
    assert f"amlemu: attempt 2. Node {lost} was lost" in log, log[-3000:]
    assert "attempt 2\n" in log and log.count("finished") == 1, log[-3000:]
    assert done["output"] == "HELLO FROM THE WORKSPACE"
    # what the lost node left on the host is gone (its container, its job's first attempt, its data volume): a new
    # node alone is there
    wait_until(lambda: [(r, n != lost) for r, n in _owned(host, stack)] == [("node", True)], timeout=60,
               interval=0.5, message=f"the host to hold a new node alone: {_owned(host, stack)}")
    with host.engine() as engine:
        assert [v.name for v in engine.volumes.list() if v.name.endswith(lost)] == []

    assert _probe(stack, "detach", COMPUTE) == {"computes": []}
    assert _contents(host) == before
    # nothing of the compute on the emulator's own engine either
    assert local.containers.list(all=True, filters={"label": [f"{labels.STACK}={stack.label}",
                                                              f"{labels.COMPUTE}={COMPUTE}"]}) == []
    assert [v.name for v in local.volumes.list() if v.name.startswith(f"amlemu-{stack.label}-nodedata-")] == []
    local.close()


def _running_job(hosts: list[StandInHost], job: str) -> StandInHost | None:
    """The host whose engine runs a container of the job."""
    for host in hosts:
        with host.engine() as engine:
            if engine.containers.list(filters={"label": f"{labels.JOB_NAME}={job}"}):
                return host
    return None


def test_a_cluster_pooled_over_two_hosts_requeues_a_cut_off_hosts_job_on_the_other_at_once(
        lab, remote_stack, tmp_path):
    """Issue 23, point 2 end to end: an AmlCompute cluster over two attached hosts (the tag amlemu.hostPool), one
    node on each; the host running the job is cut off; the job's next attempt runs on the other host's engine."""
    stack, arm = remote_stack, Arm(remote_stack)
    started = lab.start(2)
    before = {h.name: _contents(h) for h in started}
    seen = _probe(stack, "pool", "spread", str(tmp_path / "work"), lab.hosts[0].username, str(lab.keys.private_file),
                  *(h.address for h in started))
    assert seen["cluster"] == "Succeeded"
    job = seen["job"]
    wait_until(lambda: "waiting to be cut off" in arm.log(job), timeout=300, interval=0.5,
               message="the job's first attempt to be running on a host")
    lost = _running_job(started, job)
    assert lost is not None, "no host's engine runs the job"
    (other,) = [h for h in started if h != lost]
    lab.cut_off(lost)
    cut = time.time()
    # At once, as for a node that died
    wait_until(lambda: arm.history(job)["attempt"] == 2, timeout=LOST_WITHIN, interval=0.5,
               message="the job on the lost host to be back in the queue")
    assert [h["status"] for h in arm.history(job)["history"]
            if "was lost while running attempt 1" in (h.get("message") or "")] == ["Queued"]
    done = _probe(stack, "finish", job, str(tmp_path / "work"))
    assert done["status"] == "Completed", arm.log(job)[-3000:]
    assert done["output"] == "HELLO FROM THE WORKSPACE"
    with other.engine() as engine:  # attempt 2 ran on the other host
        assert _started(engine, job, cut) == 1

    lost = lab.reconnect(lost)  # at its own address: the attach names it
    left = _probe(stack, "unpool", "spread", *seen["hosts"])["computes"]
    assert {"spread", *seen["hosts"]}.isdisjoint(left), left
    for host in (lost, other):  # each as it was before the attach, what the lost node left on the cut one included
        wait_until(lambda h=host: _contents(h) == before[h.name], timeout=120, interval=1,
                   message=f"{host.name} to be as it was: {_contents(host)} against {before[host.name]}")
