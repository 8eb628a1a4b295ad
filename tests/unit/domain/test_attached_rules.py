"""An attach request's VirtualMachine properties (domain/compute/attached.py), the seal of its secrets
(services/attached.py) and the node it would run on its host (controller/specs/host_nodes.py): pure, no host."""

import pytest

from emulator import pki
from emulator.controller.specs.host_nodes import HOST_SOCKET, host_node_spec
from emulator.controller.specs.nodes import NODE_DATA_DIR
from emulator.dispatch import rank_files
from emulator.domain.compute import attached
from emulator.errors import ValidationFailed
from emulator.services import attached as service
from emulator.settings import Settings
from emulator.store.tables import Compute

VM = "/subscriptions/s/resourceGroups/g/providers/Microsoft.Compute/virtualMachines/"
KEY = "-----BEGIN OPENSSH PRIVATE KEY-----\nabc\n-----END OPENSSH PRIVATE KEY-----\n"


def outer(name: str = "gpu-box.lan", **inner) -> dict:
    account = {"username": "azureuser", "privateKeyData": KEY, "password": None, "publicKeyData": None}
    return {"computeType": "VirtualMachine", "resourceId": VM + name,
            "properties": {"sshPort": 22, "administratorAccount": account, **inner}}


def test_the_vm_name_is_the_address_unless_one_is_given():
    spec = attached.parse(outer(), {})
    assert (spec.address, spec.address_target, spec.ssh_port, spec.username) == (
        "gpu-box.lan", "properties.resourceId", 22, "azureuser")
    given = attached.parse(outer(address="10.0.0.7"), {})
    assert (given.address, given.address_target) == ("10.0.0.7", "properties.properties.address")


def test_an_engine_is_named_by_address_or_tag():
    by_address = attached.parse(outer(address="tcp://10.0.0.7"), {})
    assert (by_address.engine_url, by_address.address) == ("tcp://10.0.0.7:2375", "10.0.0.7")
    by_tag = attached.parse(outer(), {attached.ENGINE_TAG: "tcp://engine:2376"})
    assert by_tag.engine_url == "tcp://engine:2376"
    assert attached.target_of(by_tag, "engine") == f"tags.{attached.ENGINE_TAG}"


def test_secrets_stay_out_of_the_repr_and_the_stored_properties():
    spec = attached.parse(outer(), {})
    assert "PRIVATE" not in repr(spec)
    assert attached.stored_inner(spec)["administratorAccount"] == {
        "username": "azureuser", "password": None, "publicKeyData": None, "privateKeyData": None}


@pytest.mark.parametrize("body, target", [
    ({**outer(), "resourceId": None}, "properties.resourceId"),
    ({**outer(), "resourceId": "/subscriptions/s/resourceGroups/g/providers/Microsoft.Web/sites/x"},
     "properties.resourceId"),
    (outer(sshPort="22"), "properties.properties.sshPort"),
    (outer(sshPort=0), "properties.properties.sshPort"),
    (outer(address="not a host!"), "properties.properties.address"),
    (outer(address="tcp://h/path"), "properties.properties.address"),
    (outer(administratorAccount={"username": "u"}), "properties.properties.administratorAccount.privateKeyData"),
    (outer(administratorAccount={"privateKeyData": KEY}), "properties.properties.administratorAccount.username"),
    (outer(administratorAccount={"username": 3, "password": "p"}),
     "properties.properties.administratorAccount.username"),
])
def test_bad_fields_are_named(body, target):
    with pytest.raises(ValidationFailed) as failed:
        attached.parse(body, {})
    assert failed.value.target == target


def test_host_check_failures_name_their_field():
    spec = attached.parse(outer(), {})
    assert attached.target_of(spec, "address") == "properties.resourceId"
    assert attached.target_of(spec, "sshPort") == "properties.properties.sshPort"
    assert attached.target_of(spec, "credentials") == "properties.properties.administratorAccount"
    assert attached.target_of(spec, "privateKey") == "properties.properties.administratorAccount.privateKeyData"


def test_sealed_credentials_open_with_the_same_secret_only():
    sealed = service.seal(b"k" * 32, {"privateKey": KEY, "password": None})
    assert "PRIVATE" not in sealed
    assert service.unseal(b"k" * 32, sealed) == {"privateKey": KEY, "password": None}
    with pytest.raises(ValueError):
        service.unseal(b"x" * 32, sealed)


def test_a_host_node_is_detached_reaches_redis_at_the_advertised_address_and_uses_the_hosts_engine(tmp_path):
    settings = Settings(stack="s", data_dir=tmp_path, advertised_redis_url="redis://10.0.0.1:6379/0")
    pki.ensure_ca(settings.ca_dir)  # the api makes it as it starts
    compute = Compute(key="/subscriptions/s/resourcegroups/g/providers/p/workspaces/ws/computes/box",
                      workspace_key="/subscriptions/s/resourcegroups/g/providers/p/workspaces/ws", name="box")
    spec = host_node_spec(settings, compute, "tvmps_1_d")
    assert spec.env["AMLEMU_REDIS_URL"] == "redis://10.0.0.1:6379/0"
    assert "AMLEMU_HOST_DATA_DIR" not in spec.env and rank_files.TOKEN in spec.env  # its files through the api
    assert spec.mounts[HOST_SOCKET] == HOST_SOCKET and str(settings.host_dir) not in spec.mounts
    assert list(spec.volumes.values()) == [NODE_DATA_DIR]
    assert spec.cpus is None and spec.memory_bytes is None and spec.networks == ()
    with pytest.raises(ValueError):
        host_node_spec(Settings(stack="s", data_dir=tmp_path), compute, "tvmps_1_d")
