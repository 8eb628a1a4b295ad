"""A cluster pooled over attached hosts (the tag `amlemu.hostPool`), on FakeRuntimes standing in for the hosts'
engines: its nodes are spread over the hosts that answer, run there as detached nodes reaching the stack's Redis at
its advertised address, and get their images copied first; a host cut off takes its nodes (unusable at once, their
jobs requeued) and the new nodes go to the others; back, what ran there is removed. A pool naming anything but an
attached host of the workspace is refused at PUT, naming the tag."""

import pytest

from emulator import pki, tokens
from emulator.controller.effects import Actuator, Effects
from emulator.controller.host_engines import RETRY_SECONDS, HostEngines
from emulator.controller.host_nodes import HostNodes
from emulator.controller.host_pools import HostPools
from emulator.controller.hosts import AttachedHosts
from emulator.controller.reconcilers.clusters import ClusterReconciler
from emulator.controller.reconcilers.job_containers import JobContainers
from emulator.controller.reconcilers.jobs import JobReconciler
from emulator.controller.specs.host_nodes import host_network
from emulator.dispatch import protocol, rank_files
from emulator.dispatch.celery_app import ready_key
from emulator.domain.compute.cluster import NodeState
from emulator.errors import ValidationFailed
from emulator.runtime.base import ContainerSpec
from emulator.runtime.engines import Engines
from emulator.runtime.labels import ATTEMPT, HOST, JOB, NODE, RANK, ROLE, STACK
from emulator.services import attached, computes
from emulator.store.tables import Job
from tests.unit.controller.test_clusters_on_fake import report, submit
from tests.unit.controller.test_host_nodes_on_fake import FakeHost

ADDRESSES = {"vm-a": "10.1.0.5", "vm-b": "10.1.0.6"}


class CutOffHost(FakeHost):
    """A host whose engine, once cut off, answers nothing at all."""

    def list(self, wanted, managed=True):
        self.ping()
        return super().list(wanted, managed)


@pytest.fixture
def hosts(clock) -> dict[str, CutOffHost]:
    return {address: CutOffHost(clock) for address in ADDRESSES.values()}


@pytest.fixture
def pool(settings, store, fake, broker, clock, scheduler, hosts):
    """The controller's parts that act on pooled clusters, wired as controller/main.py wires them."""
    pki.ensure_ca(settings.ca_dir)
    settings.advertised_redis_url = "redis://10.1.0.1:6379/0"
    secret = tokens.load_secret(settings.data_dir / "token.key")

    def runtime_of(access):
        host = hosts[access.address]
        host.ping()
        return host
    engines = HostEngines(clock, runtime_of)
    runtime = Engines(fake, engines.connected, engines.lost)
    host_nodes = HostNodes(settings, store, broker, clock, secret, scheduler, source=None, engines=engines)
    sent: list = []
    act = Actuator(runtime, broker, settings.stack, send=lambda queue, message: sent.append(message))
    clusters = ClusterReconciler(settings, store, runtime, broker, clock, scheduler, act,
                                 pools=HostPools(settings, store, engines, None))

    job_containers = JobContainers(settings, store, runtime, broker,
                                   JobReconciler(settings, lambda *_: None, lambda _env: None).active_attempts)

    def tick():
        host_nodes.tick()  # as the controller's pass: the hosts' own nodes (and connections) first
        clusters.tick()
        job_containers.tick(runtime.list({STACK: settings.stack, ROLE: "job"}))
    tick.sent = sent
    return tick


def attach(azure, settings, name: str) -> None:
    secret = tokens.load_secret(settings.data_dir / "token.key")
    body = {"properties": {"computeType": "VirtualMachine", "resourceId": "/subscriptions/s/resourceGroups/r/providers/"
            f"Microsoft.Compute/virtualMachines/{name}", "properties": {
                "address": ADDRESSES[name], "sshPort": 22,
                "administratorAccount": {"username": "azureuser", "password": "secret"}}}}
    attachment = attached.checked(body, secret, lambda _access: attached.HostFacts(4, 1 << 33, "26", "Debian"))
    with azure.store.transaction() as repo:
        computes.put(repo, azure.ref, repo.workspace(azure.ref.key), name, body, azure.clock(), attachment)


def put_pooled(azure, name: str, pool: str | None, nodes: int) -> None:
    body = {"tags": {"amlemu.hostPool": pool} if pool else {}, "properties": {"computeType": "AmlCompute",
            "properties": {"vmSize": "Standard_DS3_v2", "scaleSettings": {"minNodeCount": nodes,
                                                                          "maxNodeCount": max(nodes, 1)}}}}
    with azure.store.transaction() as repo:
        computes.put(repo, azure.ref, repo.workspace(azure.ref.key), name, body, azure.clock())


def pooled_nodes(host: FakeHost, settings) -> list:
    return [c for c in host.list({STACK: settings.stack, ROLE: "node"}) if HOST in c.labels]


def make_ready(azure, broker, name: str) -> None:
    for node in azure.nodes(name):
        broker.set(ready_key(node.node_id), 1)


@pytest.fixture
def two_hosts(azure, settings, pool, hosts, broker):
    """vm-a and vm-b attached, and a cluster of 4 nodes pooled over them, idle."""
    attach(azure, settings, "vm-a")
    attach(azure, settings, "vm-b")
    put_pooled(azure, "spread", "vm-a,vm-b", 4)
    pool()
    make_ready(azure, broker, "spread")
    pool()
    assert [n.state for n in azure.nodes("spread")] == [NodeState.IDLE] * 4
    return hosts[ADDRESSES["vm-a"]], hosts[ADDRESSES["vm-b"]]


def test_a_pooled_clusters_nodes_are_spread_over_its_hosts_as_detached_nodes(azure, settings, two_hosts):
    host_a, host_b = two_hosts
    assert len(pooled_nodes(host_a, settings)) == len(pooled_nodes(host_b, settings)) == 2
    assert not azure.containers("node")  # none on the emulator's own engine
    spec = next(call[1] for call in host_a.calls if call[0] == "run" and HOST in call[1].labels)
    assert spec.labels[HOST] == azure.key("vm-a")
    assert spec.env["AMLEMU_REDIS_URL"] == settings.advertised_redis_url and spec.volumes  # its own data folder
    assert (spec.cpus, spec.memory_bytes) == (1.0, int(3.5 * 1024 ** 3))  # its VM size's share, as on one machine
    assert settings.node_image in host_a.copied and settings.node_image in host_b.copied


def test_a_host_cut_off_mid_job_takes_its_nodes_the_job_requeues_and_new_nodes_go_to_the_other(
        azure, settings, store, broker, clock, pool, two_hosts):
    host_a, host_b = two_hosts
    reconciler = submit(azure, store, settings, "train", "spread")
    pool()
    job_key = azure.ref.child_id("jobs", "train").lower()
    assert protocol.is_current(broker, job_key, 1)  # sent to the cluster's queue: a node of vm-b takes it
    (message,) = pool.sent  # its ranks on the cluster's network on the hosts: the emulator's are not there
    assert (message["network"], message["sandbox_pool"]) == (host_network(settings, azure.compute("spread")), None)
    assert rank_files.recorded(broker, job_key, 1, 0) is not None  # what its node may fetch and send back
    on_b = {c.labels[NODE] for c in pooled_nodes(host_b, settings)}
    taker = min(on_b)
    report(store, reconciler, clock, job_key, taker, "claimed")
    report(store, reconciler, clock, job_key, taker, "running")
    host_b.run(ContainerSpec(name="attempt-1", image="python:3.11-slim", command=["python"], labels={
        STACK: settings.stack, ROLE: "job", JOB: protocol.job_tag(job_key), ATTEMPT: "1", RANK: "0"}))

    host_b.reachable = False
    pool()
    states = {n.node_id: n.state for n in azure.nodes("spread")}
    assert {states[n] for n in on_b} == {NodeState.UNUSABLE}
    with store.transaction() as repo:
        job = repo.session.get(Job, job_key)
        assert (job.status, job.attempt) == ("Queued", 2)
    assert not protocol.is_current(broker, job_key, 1)
    pool()  # the cluster makes up its two nodes on the host that answers
    assert len(pooled_nodes(host_a, settings)) == 4
    # back on the network before it is removed, the lost node's worker takes the requeued attempt: it is lost with it
    with store.transaction() as repo:
        reconciler.apply_event(repo, {"kind": "claimed", "job": job_key, "node": taker, "attempt": 2, "rank": 0},
                               clock(), Effects())
        job = repo.session.get(Job, job_key)
        assert (job.status, job.attempt) == ("Queued", 3) and "already lost" in job.history[-1]["message"]

    host_b.reachable = True
    clock.advance(RETRY_SECONDS)
    pool()  # back: the lost nodes' containers and their job's go
    assert not pooled_nodes(host_b, settings) and not host_b.list({ROLE: "job"})


def test_a_pool_names_attached_hosts_of_the_workspace_only(azure, settings, store):
    attach(azure, settings, "vm-a")
    put_pooled(azure, "plain", None, 0)
    for pool_names in ("vm-a,vm-x", "plain", "vm a"):
        with pytest.raises(ValidationFailed) as caught:
            put_pooled(azure, "bad", pool_names, 1)
        assert caught.value.target == "tags.amlemu.hostPool"
    assert azure.compute("bad") is None


def test_without_an_advertised_redis_the_cluster_says_what_to_set_and_starts_nothing(azure, settings, pool, hosts):
    attach(azure, settings, "vm-a")
    settings.advertised_redis_url = None
    put_pooled(azure, "spread", "vm-a", 2)
    pool()
    assert not azure.nodes("spread")
    (error,) = azure.compute("spread").errors
    assert "AMLEMU_ADVERTISED_REDIS_URL" in error["error"]["message"]


def test_a_detach_removes_the_pooled_nodes_there_too(azure, settings, store, clock, two_hosts, hosts):
    host_a, _ = two_hosts
    secret = tokens.load_secret(settings.data_dir / "token.key")
    with store.transaction() as repo:
        computes.delete(repo, azure.ref, "vm-a", clock())
    AttachedHosts(settings, store, clock, secret, runtime_of=lambda access: hosts[access.address]).tick()
    assert not host_a.list({STACK: settings.stack}) and not host_a.copied
    assert azure.compute("vm-a") is None

