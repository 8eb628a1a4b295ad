"""The controller's node for an attached VM (controller/host_nodes.py) on a real stand-in host (tests/hosts.py): the
node image is copied there and recorded, the node starts on the host's engine and reaches the stack's Redis on the
lab's network; cut off, the host's node is unusable at once; back, what the emulator left there is removed and a new
node starts. And a cluster pooled over two hosts, with the controller's parts wired as controller/main.py wires them:
its two nodes start one on each host, and when one host is cut off its node is unusable at once and the missing
node starts on the other. (The jobs' requeue is the unit tests' part: tests/unit/controller/test_host_nodes_on_fake.py
and test_host_pools_on_fake.py.) The two tests share the lab's hosts: copying the node image there is most of the
time either takes, and each copy is made once."""

import os
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from datetime import UTC, datetime

import docker
import pytest
import redis

from emulator import pki, tokens
from emulator.controller.effects import Actuator
from emulator.controller.host_engines import HostEngines
from emulator.controller.host_nodes import HostNodes
from emulator.controller.host_pools import HostPools
from emulator.controller.reconcilers.clusters import ClusterReconciler
from emulator.controller.scheduling.scheduler import JobScheduler
from emulator.dispatch.celery_app import ready_key
from emulator.domain.compute.cluster import NodeState
from emulator.runtime import hosts, labels
from emulator.runtime.docker import DockerRuntime
from emulator.runtime.engines import Engines
from emulator.services import attached, computes, workspaces
from emulator.settings import Settings
from emulator.store.db import Store
from tests.hosts import HOST_IMAGE, stand_in_hosts
from tests.waiting import wait_until


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    with stand_in_hosts(tmp_path_factory.mktemp("hosts")) as made:
        made.start(2)
        yield made


@pytest.fixture(scope="module")
def broker_ip(lab):
    return lab.redis()


def settings_of(data_dir, broker_ip: str) -> Settings:
    return Settings(stack=f"it-{uuid.uuid4().hex[:6]}", data_dir=data_dir, time_scale=1.0,
                    provisioning_delay_seconds=0.0,
                    node_image=os.environ.get("AMLEMU_IMAGE", "amlemu/emulator:latest"),
                    advertised_redis_url=f"redis://{broker_ip}:6379/0")


def attach(store, settings: Settings, lab, host, name: str) -> str:
    """The host attached as VirtualMachine compute `name` of the default workspace: its key."""
    secret = tokens.load_secret(settings.data_dir / "token.key")
    ref = workspaces.default_ref(settings)
    body = {"properties": {"computeType": "VirtualMachine", "resourceId": "/subscriptions/s/resourceGroups/r/"
            f"providers/Microsoft.Compute/virtualMachines/{name}", "properties": {
                "address": host.address, "sshPort": host.ssh_port,
                "administratorAccount": {"username": host.username, "privateKeyData": lab.keys.private_pem}}}}
    attachment = attached.checked(body, secret, hosts.check)
    with store.transaction() as repo:
        workspaces.ensure_default(repo, settings, settings_now())
        computes.put(repo, ref, repo.workspace(ref.key), name, body, settings_now(), attachment)
    return ref.child_id("computes", name).lower()


def test_the_vms_node_runs_on_its_host_is_lost_when_cut_off_and_cleaned_when_back(lab, broker_ip, tmp_path):
    host = lab.hosts[0]
    local = docker.from_env(timeout=300)
    settings = settings_of(tmp_path, broker_ip)
    pki.ensure_ca(settings.ca_dir)
    store, broker = Store(settings.db_url), redis.Redis(host=broker_ip, port=6379)
    secret = tokens.load_secret(settings.data_dir / "token.key")
    key = attach(store, settings, lab, host, "box")
    host_nodes = HostNodes(settings, store, broker, settings_now, secret, JobScheduler(settings, lambda: False),
                           local)

    def nodes():
        with store.transaction() as repo:
            return repo.nodes(key)

    def ready(lost: str | None = None) -> bool:
        host_nodes.tick()
        return [n.state for n in nodes() if n.node_id != lost] == [NodeState.IDLE.value]

    def on_host() -> list:
        runtime = hosts.HostRuntime(hosts.HostAccess(address=host.address, ssh_port=host.ssh_port,
                                                     username=host.username, private_key=lab.keys.private_pem))
        try:
            return runtime.list({labels.STACK: settings.stack, labels.COMPUTE_ID: key})
        finally:
            runtime.client.close()
    try:
        assert wait_until(ready, timeout=240, message="the VM's node to be ready on its host")
        (first,) = nodes()
        assert broker.exists(ready_key(first.node_id))
        with store.transaction() as repo:
            assert repo.compute(key).body["attached"]["copiedImages"]  # recorded: the detach removes it
        assert [c.labels[labels.NODE] for c in on_host()] == [first.node_id]

        lab.cut_off(host)
        host_nodes.tick()
        assert [(n.node_id, n.state) for n in nodes()] == [(first.node_id, NodeState.UNUSABLE.value)]

        host = lab.reconnect(host)
        with store.transaction() as repo:  # the engine gives the lowest free address: most often the one it had
            if repo.compute(key).body["properties"]["properties"]["address"] != host.address:
                pytest.skip("the stand-in host came back at another address than the one it was attached with")
        assert wait_until(lambda: host_nodes.tick() or first.node_id not in
                          [c.labels[labels.NODE] for c in on_host()], timeout=120,
                          message="the lost node's container to be removed from the host")
        assert wait_until(lambda: ready(first.node_id), timeout=240, message="a new node to be ready on the host")
        assert len(on_host()) == 1
    finally:
        host_nodes.engines.runtimes.clear()
        store.close()
        broker.close()
        local.close()


def test_a_pooled_cluster_spreads_its_nodes_and_makes_up_a_lost_hosts_node_on_the_other(lab, broker_ip, tmp_path):
    local = docker.from_env(timeout=300)
    settings = settings_of(tmp_path, broker_ip)
    pki.ensure_ca(settings.ca_dir)
    store, broker = Store(settings.db_url), redis.Redis(host=broker_ip, port=6379)
    secret = tokens.load_secret(settings.data_dir / "token.key")
    host_a, host_b = lab.hosts
    attach(store, settings, lab, host_a, "vm-a")
    attach(store, settings, lab, host_b, "vm-b")
    ref = workspaces.default_ref(settings)
    with store.transaction() as repo:
        computes.put(repo, ref, repo.workspace(ref.key), "spread", {
            "tags": {"amlemu.hostPool": "vm-a,vm-b"}, "properties": {"computeType": "AmlCompute", "properties": {
                "vmSize": "Standard_DS2_v2", "scaleSettings": {"minNodeCount": 2, "maxNodeCount": 2}}}}, settings_now())
    key = ref.child_id("computes", "spread").lower()
    scheduler, host_engines = JobScheduler(settings, lambda: False), HostEngines(settings_now)
    runtime = Engines(DockerRuntime(local), host_engines.connected, host_engines.lost)
    host_nodes = HostNodes(settings, store, broker, settings_now, secret, scheduler, local, engines=host_engines)
    clusters = ClusterReconciler(settings, store, runtime, broker, settings_now, scheduler,
                                 Actuator(runtime, broker, settings.stack),
                                 pools=HostPools(settings, store, host_engines, local))

    def tick() -> None:  # as the controller's pass: the hosts' own nodes (and connections) first
        host_nodes.tick()
        clusters.tick(runtime.list({labels.STACK: settings.stack, labels.ROLE: "node"}))

    def nodes() -> dict[str, str]:
        with store.transaction() as repo:
            return {n.node_id: n.state for n in repo.nodes(key)}

    def on(host) -> set[str]:
        with host.engine() as engine:
            return {c.labels[labels.NODE] for c in engine.containers.list(
                filters={"label": [f"{labels.STACK}={settings.stack}", f"{labels.COMPUTE_ID}={key}"]})}

    def idle(count: int) -> bool:
        tick()
        return list(nodes().values()).count(NodeState.IDLE.value) == count
    try:
        assert wait_until(lambda: idle(2), timeout=300, message="the pooled cluster's two nodes to be ready")
        assert len(on(host_a)) == len(on(host_b)) == 1 and set(nodes()) == on(host_a) | on(host_b)
        lost = on(host_b)

        lab.cut_off(host_b)
        tick()
        assert {nodes()[n] for n in lost} == {NodeState.UNUSABLE.value}  # at once, as a node that died
        assert wait_until(lambda: idle(2), timeout=240, message="the missing node to be ready on the other host")
        assert len(on(host_a)) == 2
    finally:
        host_engines.runtimes.clear()
        store.close()
        broker.close()
        local.close()


def test_a_host_that_hangs_is_found_lost_long_before_the_clients_own_timeout(lab):
    """A ping is waited for 8 s, not the engine client's 120 s: the controller's pass, which pings each host, goes on."""
    host = lab.hosts[0]
    runtime = hosts.HostRuntime(hosts.HostAccess(address=host.address, ssh_port=host.ssh_port,
                                                 username=host.username, private_key=lab.keys.private_pem))
    try:
        runtime.answers()
        lab.freeze(host)
        started = time.monotonic()
        with pytest.raises(hosts.UNREACHABLE):
            runtime.answers()
        assert time.monotonic() - started < 60  # a deadline, far above the 8 s and far below the client's 120 s
    finally:
        lab.freeze(host, frozen=False)
        runtime.client.close()


def _held_image_stream(local: docker.DockerClient, sent: threading.Event, cut: threading.Event) -> Iterator[bytes]:
    """A real image's `docker save` stream that stops after its first chunk until the host is cut off, then goes on:
    a copy half sent when the cut comes."""
    chunks = local.api.get_image(HOST_IMAGE)
    yield next(chunks)
    sent.set()  # the first chunk was taken: asked for the next
    cut.wait(timeout=120)
    yield from chunks


@pytest.mark.parametrize("over", ["ssh", "tcp"])
def test_every_call_in_flight_when_a_host_is_cut_off_fails_within_seconds(lab, over):
    """A cut-off host answers nothing, not even a reset. An exec waiting for its answer on the engine client (120 s
    read timeout), a wait on a container on the client for waits (no read timeout at all) and an image copy half sent
    each fail within seconds (the KEEPALIVE options of runtime/hosts.py), with an error the controller takes for a
    lost host."""
    (host,) = lab.start(1)
    access = hosts.HostAccess(address=host.address, ssh_port=host.ssh_port, username=host.username,
                              private_key=lab.keys.private_pem) if over == "ssh" else \
        hosts.HostAccess(address=host.address, engine_url=host.engine_url)
    local, runtime = docker.from_env(timeout=300), hosts.HostRuntime(access)
    sleeper = runtime.client.containers.run(lab.sleeper(host), ["/usr/bin/sleep", "600"], detach=True)
    sent, cut = threading.Event(), threading.Event()
    calls: dict[str, Callable[[], object]] = {
        "an exec": lambda: runtime.exec(sleeper.id, ["/usr/bin/sleep", "600"]),
        "a wait": lambda: runtime.wait(sleeper.id),
        "an image copy": lambda: list(runtime.client.api.load_image(_held_image_stream(local, sent, cut))),
    }
    ended: dict[str, tuple[float, BaseException | None]] = {}

    def call(name: str) -> None:
        try:
            calls[name]()
            ended[name] = (time.monotonic(), None)
        except BaseException as exc:  # noqa: BLE001 - what it raised is the finding
            ended[name] = (time.monotonic(), exc)
    threads = [threading.Thread(target=call, args=(name,), daemon=True) for name in calls]
    try:
        for thread in threads:
            thread.start()
        wait_until(sent.is_set, timeout=30, message="the image copy to be under way")
        wait_until(lambda: runtime.processes(sleeper.id) == 2, timeout=30, message="the exec to be running")
        runtime.answers()  # the host still answers beside the calls in flight
        assert not ended, ended
        lab.cut_off(host)
        at, _ = time.monotonic(), cut.set()
        wait_until(lambda: len(ended) == len(calls), timeout=60, message=f"every call to end: {sorted(ended)} did")
        took = {name: f"{when - at:.1f} s: {error!r}" for name, (when, error) in ended.items()}
        for when, error in ended.values():
            assert isinstance(error, hosts.UNREACHABLE), took
            assert when - at < 30, took  # far below the client's 120 s
    finally:
        cut.set()
        runtime.client.close()
        local.close()


def settings_now() -> datetime:
    return datetime.now(UTC)
