"""A remote host's engine over SSH, with the attach's settings, against stand-in hosts (tests/hosts.py): the check
names what is wrong, images reach the host by copying, and a DockerRuntime runs containers there."""

import os
import uuid

import docker
import pytest
import redis

from emulator import pki
from emulator.controller.hosts import AttachedHosts
from emulator.controller.specs.host_nodes import host_node_spec
from emulator.controller.specs.nodes import new_node_id
from emulator.dispatch.celery_app import ready_key
from emulator.runtime import hosts, labels
from emulator.runtime.base import ContainerSpec
from emulator.settings import Settings
from emulator.store.tables import Compute
from tests.hosts import key_pair, stand_in_hosts
from tests.waiting import wait_until

SMALL_IMAGE = "amlemu/debian:bookworm"  # the base every image is built on: always there


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    with stand_in_hosts(tmp_path_factory.mktemp("hosts")) as made:
        made.start(1, password="s3cret-Pass")
        yield made


@pytest.fixture
def host(lab):
    return lab.hosts[0]


def _access(lab, host, **changes) -> hosts.HostAccess:
    base = {"address": host.address, "ssh_port": host.ssh_port, "username": host.username,
            "private_key": lab.keys.private_pem}
    return hosts.HostAccess(**{**base, **changes})


def test_check_over_ssh_with_the_key_tells_the_hosts_size(lab, host):
    facts = hosts.check(_access(lab, host))
    assert facts.cpus >= 1 and facts.memory_bytes > 2**28 and facts.engine_version


def test_check_with_a_password(lab, host):
    assert hosts.check(_access(lab, host, private_key=None, password="s3cret-Pass")).cpus >= 1


def test_the_engine_named_directly(lab, host):
    assert hosts.check(hosts.HostAccess(address=host.address, engine_url=host.engine_url)).cpus >= 1


@pytest.mark.parametrize("change, part", [
    ({"address": "unused"}, "address"),  # an address on the lab's network that no host has
    ({"ssh_port": 2375 + 1}, "sshPort"),  # nothing listens there
    ({"username": "nobody"}, "credentials"),
    ({"private_key": None, "password": "wrong"}, "credentials"),
    ({"private_key": "-----BEGIN OPENSSH PRIVATE KEY-----\nnot a key\n-----END OPENSSH PRIVATE KEY-----\n"},
     "privateKey"),
])
def test_each_wrong_setting_is_named(lab, host, change, part):
    change = {k: lab.unused_address() if v == "unused" else v for k, v in change.items()}
    with pytest.raises(hosts.HostCheckFailed) as failed:
        hosts.check(_access(lab, host, **change))
    assert failed.value.part == part
    assert lab.keys.private_pem not in str(failed.value)


def test_a_wrong_key_is_refused(lab, host, tmp_path):
    other = key_pair(tmp_path, "other")
    with pytest.raises(hosts.HostCheckFailed) as failed:
        hosts.check(_access(lab, host, private_key=other.private_pem))
    assert failed.value.part == "credentials"


def test_the_host_key_seen_at_attach_is_required_from_then_on(lab, host, tmp_path):
    seen = hosts.check(_access(lab, host)).host_key
    assert seen and seen.split()[0] in ("ssh-ed25519", "ecdsa-sha2-nistp256", "ssh-rsa")
    assert hosts.check(_access(lab, host, host_key=seen)).cpus >= 1
    impostor = " ".join(key_pair(tmp_path, "impostor").public_line.split()[:2])  # another machine's key
    with pytest.raises(hosts.HostCheckFailed) as failed:
        hosts.check(_access(lab, host, host_key=impostor))
    assert failed.value.part == "hostKey"


def test_a_host_cut_off_the_network_is_unreachable_until_it_is_back(lab):
    (host,) = lab.start(1)
    lab.cut_off(host)
    with pytest.raises(hosts.HostCheckFailed) as failed:
        hosts.check(_access(lab, host))
    assert failed.value.part == "address"
    host = lab.reconnect(host)
    assert wait_until(lambda: _answers(lab, host), timeout=30, message=f"{host.name} to be back")
    lab.stop(host)
    with pytest.raises(hosts.HostCheckFailed):
        hosts.check(_access(lab, host))


def _answers(lab, host) -> bool:
    try:
        return hosts.check(_access(lab, host)).cpus >= 1
    except hosts.HostCheckFailed:
        return False


def test_an_image_is_copied_once_then_runs_there(lab, host):
    local = docker.from_env()
    runtime = hosts.HostRuntime(_access(lab, host))
    try:
        hosts.copy_image(local, runtime.client, SMALL_IMAGE)
        assert hosts.copy_image(local, runtime.client, SMALL_IMAGE) == []  # there now: nothing copied
        assert runtime.client.images.get(SMALL_IMAGE).id == local.images.get(SMALL_IMAGE).id
        name = f"amlemu-hosts-it-{uuid.uuid4().hex[:6]}"
        ran = runtime.run(ContainerSpec(name=name, image=SMALL_IMAGE, command=["sh", "-c", "echo on $(hostname)"],
                                        labels={"amlemu.stack": "hosts-it"}))
        assert runtime.wait(ran.id).code == 0
        wait_until(lambda: "on " in runtime.logs(ran.id), message="the container's output")
        runtime.remove(ran.id)
        assert runtime.find(name) is None
    finally:
        runtime.client.close()
        local.close()


def test_a_node_on_the_host_reaches_the_stacks_redis_and_detach_leaves_nothing(lab, host, tmp_path):
    """The network path of a node on an attached host: its container, run by the host's engine from the emulator's
    image copied there, reaches a Redis on the lab's network at the advertised address and says it is ready; the
    detach's cleanup removes the node, its network and volume, and the image it copied."""
    local = docker.from_env(timeout=300)
    node_image = os.environ.get("AMLEMU_IMAGE", "amlemu/emulator:latest")
    broker_box = local.containers.run("amlemu/redis:latest", detach=True, network=lab.network.name,
                                      labels={"amlemu.it": "true", "amlemu.stack": lab.label})
    broker_box.reload()
    redis_ip = broker_box.attrs["NetworkSettings"]["Networks"][lab.network.name]["IPAddress"]
    settings = Settings(stack=f"it-{uuid.uuid4().hex[:6]}", data_dir=tmp_path, node_image=node_image,
                        advertised_redis_url=f"redis://{redis_ip}:6379/0")
    pki.ensure_ca(settings.ca_dir)  # the api makes it as it starts: a detached node carries its CA
    workspace = "/subscriptions/s/resourcegroups/rg/providers/microsoft.machinelearningservices/workspaces/ws"
    compute = Compute(key=f"{workspace}/computes/box", workspace_key=workspace, name="box",
                      compute_type="VirtualMachine")
    node_id = new_node_id(False)
    runtime = hosts.HostRuntime(_access(lab, host))
    local.images.get(node_image).tag(f"{node_image}-second-name")  # an image under two names is removed all the same
    copied = runtime.ensure_image(local, node_image)
    assert copied == [local.images.get(node_image).id]  # not there before: copied, and recorded for the detach
    spec = host_node_spec(settings, compute, node_id)
    runtime.ensure_network(spec.network, {labels.STACK: settings.stack, labels.COMPUTE_ID: compute.key})
    runtime.run(spec)
    broker = redis.Redis(host=redis_ip, port=6379)
    wait_until(lambda: broker.exists(ready_key(node_id)), timeout=120,
               message=f"the node on {host.name} to be ready: {runtime.logs(spec.name)[-2000:]}")

    AttachedHosts(settings, None, None, b"", runtime_of=lambda _: runtime)._clean(
        compute.key, compute.name, runtime.access, copied)
    assert runtime.list({labels.COMPUTE_ID: compute.key}) == []
    assert runtime.networks({labels.COMPUTE_ID: compute.key}) == {}
    assert runtime.volumes({labels.COMPUTE_ID: compute.key}) == []
    assert copied[0] not in {image.id for image in runtime.client.images.list()}
    local.images.remove(f"{node_image}-second-name")
    broker.close()
    local.close()
