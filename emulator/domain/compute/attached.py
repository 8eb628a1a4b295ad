"""Attached VirtualMachine compute as the attach request gives it (pure): the VM's ARM id, where its SSH server is,
who logs in and with what, or the Docker engine named directly. Each wrong field is named as ARM names it."""

import re
import urllib.parse
from dataclasses import dataclass, field

from emulator.domain import payload
from emulator.errors import ValidationFailed

INNER = "properties.properties"
ACCOUNT = f"{INNER}.administratorAccount"
# The SDK sends no address (VirtualMachineCompute has none): the VM's name, last in its ARM id, is taken as the host
# name, as a VM's name resolves on its own network. A REST caller may give properties.properties.address instead.
VM_ID = re.compile(r"^/subscriptions/[^/]+/resourceGroups/[^/]+/providers/Microsoft\.Compute/virtualMachines/"
                   r"([A-Za-z0-9._-]{1,64})$", re.IGNORECASE)
# The documented way to name a remote Docker engine instead of SSH (the SDK sends tags, not an address): the tag's
# value, or an address, spelled as DOCKER_HOST is (tcp://host:port, an engine on a private network).
ENGINE_TAG = "amlemu.dockerHost"
_HOST = re.compile(r"^[A-Za-z0-9]([A-Za-z0-9.-]{0,251}[A-Za-z0-9])?$|^\[?[0-9A-Fa-f:.]+\]?$")


@dataclass(frozen=True)
class AttachSpec:
    resource_id: str
    address: str
    address_target: str  # where the address came from: properties.properties.address or properties.resourceId
    ssh_port: int = 22
    username: str | None = None
    private_key: str | None = field(default=None, repr=False)
    password: str | None = field(default=None, repr=False)
    public_key: str | None = None
    engine_url: str | None = None


def engine_url(value: str, target: str) -> str:
    """tcp://host[:port] (2375 by default), as DOCKER_HOST spells an engine on the network."""
    parsed = urllib.parse.urlparse(value)
    try:
        port = parsed.port or 2375
    except ValueError:
        port = 0
    if parsed.scheme != "tcp" or not parsed.hostname or parsed.path not in ("", "/") or not 0 < port < 65536:
        raise ValidationFailed(f"{target} names a Docker engine as tcp://host:port; got {value!r}.", target=target)
    return f"tcp://{parsed.hostname}:{port}"


def _port(value: object) -> int:
    target = f"{INNER}.sshPort"
    if value is None:
        return 22  # the SDK's default too
    if isinstance(value, bool) or not isinstance(value, int) or not 0 < value < 65536:
        raise ValidationFailed(f"{target} must be a port number from 1 to 65535, got {value!r}.", target=target)
    return value


def _address(outer: dict, inner: dict) -> tuple[str, str, str | None]:
    """(address, the field it came from, engine URL when the address is one)."""
    resource_id = payload.required_string(outer.get("resourceId"), "properties.resourceId")
    found = VM_ID.match(resource_id)
    if found is None:
        raise ValidationFailed("properties.resourceId must be a virtual machine's ARM id, /subscriptions/{id}/"
                               "resourceGroups/{group}/providers/Microsoft.Compute/virtualMachines/{name}; got "
                               f"{resource_id!r}.", target="properties.resourceId")
    given = payload.string(inner.get("address"), f"{INNER}.address")
    if given is None:
        return found.group(1), "properties.resourceId", None
    if given.startswith("tcp://"):
        url = engine_url(given, f"{INNER}.address")
        return urllib.parse.urlparse(url).hostname, f"{INNER}.address", url
    if not _HOST.match(given):
        raise ValidationFailed(f"{INNER}.address must be a host name or IP address, got {given!r}.",
                               target=f"{INNER}.address")
    return given.strip("[]"), f"{INNER}.address", None


def parse(outer: dict, tags: dict[str, str]) -> AttachSpec:
    """The attach request's VirtualMachine properties (`outer` is the body's `properties`)."""
    inner = payload.obj(outer.get("properties"), INNER)
    address, address_target, url = _address(outer, inner)
    if tags.get(ENGINE_TAG):
        url = engine_url(tags[ENGINE_TAG], f"tags.{ENGINE_TAG}")
    account = payload.obj(inner.get("administratorAccount"), ACCOUNT)
    username = payload.string(account.get("username"), f"{ACCOUNT}.username")
    key = payload.string(account.get("privateKeyData"), f"{ACCOUNT}.privateKeyData")
    password = payload.string(account.get("password"), f"{ACCOUNT}.password")
    if url is None:  # over SSH: a user and a way to log in, as Azure asks
        if not username or not username.strip():
            raise ValidationFailed(f"{ACCOUNT}.username is required to attach a virtual machine.",
                                   target=f"{ACCOUNT}.username")
        if not key and not password:
            raise ValidationFailed(f"{ACCOUNT}.privateKeyData or {ACCOUNT}.password is required to attach a "
                                   "virtual machine.", target=f"{ACCOUNT}.privateKeyData")
    return AttachSpec(resource_id=outer["resourceId"], address=address, address_target=address_target,
                      ssh_port=_port(inner.get("sshPort")), username=username, private_key=key or None,
                      password=password or None,
                      public_key=payload.string(account.get("publicKeyData"), f"{ACCOUNT}.publicKeyData"),
                      engine_url=url)


def target_of(spec: AttachSpec, part: str) -> str:
    """The field a failed host check (runtime/hosts.py HostCheckFailed.part) blames."""
    return {"address": spec.address_target, "sshPort": f"{INNER}.sshPort", "credentials": ACCOUNT,
            "privateKey": f"{ACCOUNT}.privateKeyData",
            "engine": f"tags.{ENGINE_TAG}" if spec.engine_url and spec.address_target == "properties.resourceId"
            else spec.address_target}.get(part, spec.address_target)


def stored_inner(spec: AttachSpec) -> dict:
    """What get and list show: Azure never returns the private key or the password."""
    return {"address": spec.address, "sshPort": spec.ssh_port, "virtualMachineSize": None,
            "notebookServerPort": None, "isNotebookInstanceCompute": False,
            "administratorAccount": {"username": spec.username, "password": None,
                                     "publicKeyData": spec.public_key, "privateKeyData": None}}
