"""A remote host's engine over SSH, with the attach's settings, against stand-in hosts (tests/hosts.py): the check
names what is wrong, images reach the host by copying, and a DockerRuntime runs containers there."""

import uuid

import pytest

from emulator.runtime import hosts
from emulator.runtime.base import ContainerSpec
from tests.hosts import stand_in_hosts
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
    ({"address": "no-such-host.invalid"}, "address"),
    ({"ssh_port": 2375 + 1}, "sshPort"),  # nothing listens there
    ({"username": "nobody"}, "credentials"),
    ({"private_key": None, "password": "wrong"}, "credentials"),
    ({"private_key": "-----BEGIN OPENSSH PRIVATE KEY-----\nnot a key\n-----END OPENSSH PRIVATE KEY-----\n"},
     "privateKey"),
])
def test_each_wrong_setting_is_named(lab, host, change, part):
    with pytest.raises(hosts.HostCheckFailed) as failed:
        hosts.check(_access(lab, host, **change))
    assert failed.value.part == part
    assert lab.keys.private_pem not in str(failed.value)


def test_a_wrong_key_is_refused(lab, host, tmp_path):
    from tests.hosts import key_pair
    other = key_pair(tmp_path, "other")
    with pytest.raises(hosts.HostCheckFailed) as failed:
        hosts.check(_access(lab, host, private_key=other.private_pem))
    assert failed.value.part == "credentials"


def test_an_image_is_copied_once_then_runs_there(lab, host):
    import docker
    local = docker.from_env()
    runtime = hosts.HostRuntime(_access(lab, host))
    try:
        assert hosts.copy_image(local, runtime.client, SMALL_IMAGE) in (True, False)
        assert hosts.copy_image(local, runtime.client, SMALL_IMAGE) is False  # there now: nothing copied
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
