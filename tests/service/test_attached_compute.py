"""Attached VirtualMachine compute through the api, against real stand-in hosts (tests/hosts.py): the host is checked
before the attach is accepted, get and list show it as Azure does without its secrets, every wrong setting is a 400
naming its field with nothing stored, and detach leaves the host as it was."""

import uuid

import pytest

from emulator.controller.hosts import AttachedHosts
from emulator.runtime import labels
from emulator.runtime.base import MANAGED
from tests.hosts import key_pair, stand_in_hosts
from tests.service.test_api import API, COMPUTES, assert_arm_error, list_computes
from tests.service.test_studio_pages import STUDIO, _login

pytestmark = pytest.mark.docker
SUB_RG = "/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg"
SMALL_IMAGE = "amlemu/debian:bookworm"


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    with stand_in_hosts(tmp_path_factory.mktemp("hosts")) as made:
        made.start(1)
        yield made


@pytest.fixture
def host(lab):
    return lab.hosts[0]


def vm_id(name: str) -> str:
    return f"{SUB_RG}/providers/Microsoft.Compute/virtualMachines/{name}"


def vm_body(host, key: str | None, **inner) -> dict:
    """What the SDK's VirtualMachineCompute sends (no address: the VM's name is the host's)."""
    account = {"username": host.username, "password": None, "publicKeyData": None, "privateKeyData": key}
    return {"location": "local", "tags": {"team": "ml"},
            "properties": {"computeType": "VirtualMachine", "resourceId": vm_id(host.address),
                           "description": "a team's box",
                           "properties": {"sshPort": host.ssh_port, "administratorAccount": account, **inner}}}


def _host_containers(host) -> list:
    with host.engine() as engine:
        return engine.containers.list(all=True)


def test_attach_checks_the_host_and_shows_it_without_secrets(client, auth, lab, host, app):
    response = client.put(f"{COMPUTES}/box", params=API, json=vm_body(host, lab.keys.private_pem), headers=auth)
    assert response.status_code in (200, 201), response.text
    assert "PRIVATE KEY" not in response.text
    got = client.get(f"{COMPUTES}/box", params=API, headers=auth).json()
    props = got["properties"]
    assert props["computeType"] == "VirtualMachine" and props["provisioningState"] == "Succeeded"
    assert props["isAttachedCompute"] is True and props["resourceId"] == vm_id(host.address)
    assert props["properties"]["address"] == host.address and props["properties"]["sshPort"] == 22
    assert props["properties"]["administratorAccount"] == {"username": host.username, "password": None,
                                                           "publicKeyData": None, "privateKeyData": None}
    assert [c["name"] for c in list_computes(client, auth)] == ["box"]
    with app.state.context.store.transaction() as repo:  # sealed in the store, not in the clear
        stored = str(repo.compute(got["id"].lower()).body)
    assert "PRIVATE KEY" not in stored and lab.keys.private_pem.splitlines()[1] not in stored
    again = client.put(f"{COMPUTES}/box", params=API, json=vm_body(host, lab.keys.private_pem), headers=auth)
    assert_arm_error(again, 409, target="computeName")
    _login(client, auth)  # the Studio lists it among the computes
    page = client.get(f"{STUDIO}/computes")
    assert page.status_code == 200 and "box" in page.text and "PRIVATE KEY" not in page.text


def test_the_engine_named_directly(client, auth, host):
    body = vm_body(host, None, address=host.engine_url)
    body["properties"]["properties"]["administratorAccount"] = None
    response = client.put(f"{COMPUTES}/engine", params=API, json=body, headers=auth)
    assert response.status_code in (200, 201), response.text
    assert response.json()["properties"]["properties"]["address"] == host.address


MALFORMED = "-----BEGIN OPENSSH PRIVATE KEY-----\nnot a key\n-----END OPENSSH PRIVATE KEY-----"
# What each bad attach changes in a good one: (the body's properties, its inner properties, the account, context).
BREAKS = {
    "unreachable address": lambda outer, inner, account, ctx: inner.update(address=ctx["unused"]),
    "closed port": lambda outer, inner, account, ctx: inner.update(sshPort=2376),
    "port out of range": lambda outer, inner, account, ctx: inner.update(sshPort=70000),
    "wrong user": lambda outer, inner, account, ctx: account.update(username="nobody"),
    "wrong key": lambda outer, inner, account, ctx: account.update(privateKeyData=ctx["other"]),
    "malformed key": lambda outer, inner, account, ctx: account.update(privateKeyData=MALFORMED),
    "no key nor password": lambda outer, inner, account, ctx: account.update(privateKeyData=None),
    "no user": lambda outer, inner, account, ctx: account.update(username=None),
    "not a VM's id": lambda outer, inner, account, ctx: outer.update(
        resourceId=f"{SUB_RG}/providers/Microsoft.Storage/storageAccounts/x"),
    "bad engine URL": lambda outer, inner, account, ctx: inner.update(address="tcp://"),
}


def _broken(host, keys, what: str, **ctx) -> dict:
    body = vm_body(host, keys.private_pem)
    outer = body["properties"]
    BREAKS[what](outer, outer["properties"], outer["properties"]["administratorAccount"], ctx)
    return body


@pytest.mark.parametrize("what, target", [
    ("unreachable address", "properties.properties.address"),
    ("closed port", "properties.properties.sshPort"),
    ("port out of range", "properties.properties.sshPort"),
    ("wrong user", "properties.properties.administratorAccount"),
    ("wrong key", "properties.properties.administratorAccount"),
    ("malformed key", "properties.properties.administratorAccount.privateKeyData"),
    ("no key nor password", "properties.properties.administratorAccount.privateKeyData"),
    ("no user", "properties.properties.administratorAccount.username"),
    ("not a VM's id", "properties.resourceId"),
    ("bad engine URL", "properties.properties.address"),
])
def test_bad_input_is_named_and_nothing_is_attached(shared, lab, host, tmp_path, what, target):
    other = key_pair(tmp_path, "other").private_pem
    response = shared.client.put(f"{COMPUTES}/bad", params=API, json=_broken(host, lab.keys, what, other=other, unused=lab.unused_address()),
                                 headers=shared.auth)
    error = assert_arm_error(response, 400, target=target)
    assert lab.keys.private_pem not in response.text and other not in response.text
    assert "PRIVATE KEY" not in error["message"]
    assert status_of(shared.client, shared.auth, "bad") == 404
    assert _host_containers(host) == []


def test_detach_removes_what_the_emulator_ran_there_and_nothing_else(client, auth, app, lab, host):
    body = vm_body(host, lab.keys.private_pem)
    made = client.put(f"{COMPUTES}/detached", params=API, json=body, headers=auth).json()
    key = made["id"].lower()
    lab.load(host, SMALL_IMAGE)
    tag = uuid.uuid4().hex[:6]
    with host.engine() as engine:  # one container as the emulator labels its own, one of the host's owner
        engine.containers.run(SMALL_IMAGE, ["sleep", "600"], name=f"ours-{tag}", detach=True,
                              labels={MANAGED: "true", labels.COMPUTE_ID: key})
        engine.containers.run(SMALL_IMAGE, ["sleep", "600"], name=f"theirs-{tag}", detach=True)
    try:
        response = client.delete(f"{COMPUTES}/detached", params={**API, "underlyingResourceAction": "Detach"},
                                  headers=auth)
        assert response.status_code == 202, response.text
        context = app.state.context
        AttachedHosts(context.settings, context.store, context.clock, context.secret).tick()  # the controller's part
        assert status_of(client, auth, "detached") == 404
        with host.engine() as engine:
            assert [c.name for c in engine.containers.list(all=True)] == [f"theirs-{tag}"]
    finally:
        with host.engine() as engine:
            for container in engine.containers.list(all=True):
                container.remove(force=True)


def status_of(client, auth, name: str) -> int:
    return client.get(f"{COMPUTES}/{name}", params=API, headers=auth).status_code
