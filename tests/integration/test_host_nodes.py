"""The controller's node for an attached VM (controller/host_nodes.py) on a real stand-in host (tests/hosts.py): the
node image is copied there and recorded, the node starts on the host's engine and reaches the stack's Redis on the
lab's network; cut off, the host's node is unusable at once; back, what the emulator left there is removed and a new
node starts. (Its job's requeue is the unit tests' part: tests/unit/controller/test_host_nodes_on_fake.py.)"""

import os
import uuid
from datetime import UTC, datetime

import docker
import pytest
import redis

from emulator import pki, tokens
from emulator.controller.host_nodes import HostNodes
from emulator.controller.scheduling.scheduler import JobScheduler
from emulator.dispatch.celery_app import ready_key
from emulator.domain.compute.cluster import NodeState
from emulator.runtime import hosts, labels
from emulator.services import attached, computes, workspaces
from emulator.settings import Settings
from emulator.store.db import Store
from tests.hosts import stand_in_hosts
from tests.waiting import wait_until


@pytest.fixture
def lab(tmp_path_factory):
    with stand_in_hosts(tmp_path_factory.mktemp("hosts")) as made:
        made.start(1)
        yield made


@pytest.fixture
def broker_ip(lab):
    """A Redis on the lab's network: where the hosts' nodes reach the stack's."""
    local = docker.from_env()
    box = local.containers.run("amlemu/redis:latest", detach=True, network=lab.network.name,
                               labels={"amlemu.it": "true", "amlemu.stack": lab.label})
    box.reload()
    yield box.attrs["NetworkSettings"]["Networks"][lab.network.name]["IPAddress"]
    box.remove(force=True)
    local.close()


def test_the_vms_node_runs_on_its_host_is_lost_when_cut_off_and_cleaned_when_back(lab, broker_ip, tmp_path):
    (host,) = lab.hosts
    local = docker.from_env(timeout=300)
    settings = Settings(stack=f"it-{uuid.uuid4().hex[:6]}", data_dir=tmp_path, time_scale=1.0,
                        node_image=os.environ.get("AMLEMU_IMAGE", "amlemu/emulator:latest"),
                        advertised_redis_url=f"redis://{broker_ip}:6379/0")
    pki.ensure_ca(settings.ca_dir)
    store, broker = Store(settings.db_url), redis.Redis(host=broker_ip, port=6379)
    secret = tokens.load_secret(settings.data_dir / "token.key")
    ref = workspaces.default_ref(settings)
    body = {"properties": {"computeType": "VirtualMachine", "resourceId": "/subscriptions/s/resourceGroups/r/"
            "providers/Microsoft.Compute/virtualMachines/box", "properties": {
                "address": host.address, "sshPort": host.ssh_port,
                "administratorAccount": {"username": host.username, "privateKeyData": lab.keys.private_pem}}}}
    attachment = attached.checked(body, secret, hosts.check)
    with store.transaction() as repo:
        workspaces.ensure_default(repo, settings, settings_now())
        computes.put(repo, ref, repo.workspace(ref.key), "box", body, settings_now(), attachment)
    key = ref.child_id("computes", "box").lower()
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
        host_nodes.runtimes.clear()
        store.close()
        broker.close()
        local.close()


def settings_now() -> datetime:
    return datetime.now(UTC)
