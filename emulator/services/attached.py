"""Attached VirtualMachine compute (issue 23): the host is checked before the attach is accepted (reachable, login
accepted, Docker engine answering), so a wrong setting is a 400 naming its field and nothing is stored. Not managed,
as in Azure: no scaling, no quota, no size limits beyond what the host has.

The private key and password are kept sealed (Fernet, with a key derived from the emulator's own token key in its
data directory, 0600) and never returned: get and list show the user and the port only, as Azure does."""

import base64
import json
from collections.abc import Callable

from cryptography.fernet import Fernet, InvalidToken
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from emulator.domain import payload
from emulator.domain.compute import attached
from emulator.errors import ValidationFailed
from emulator.runtime.hosts import HostAccess, HostCheckFailed, HostFacts
from emulator.store.tables import Compute

COMPUTE_TYPE = "VirtualMachine"
HostCheck = Callable[[HostAccess], HostFacts]


def _fernet(secret: bytes) -> Fernet:
    key = HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=b"amlemu attached host credentials").derive(secret)
    return Fernet(base64.urlsafe_b64encode(key))


def seal(secret: bytes, credentials: dict[str, str | None]) -> str:
    return _fernet(secret).encrypt(json.dumps(credentials).encode()).decode()


def unseal(secret: bytes, sealed: str) -> dict[str, str | None]:
    try:
        return json.loads(_fernet(secret).decrypt(sealed.encode()))
    except InvalidToken as exc:  # the data directory's token key changed: the attach must be made again
        raise ValueError("the attached host's credentials were sealed with another key") from exc


def _access(spec: attached.AttachSpec) -> HostAccess:
    return HostAccess(address=spec.address, ssh_port=spec.ssh_port, username=spec.username,
                      private_key=spec.private_key, password=spec.password, engine_url=spec.engine_url)


def checked(body: object, secret: bytes, check: HostCheck) -> dict | None:
    """For a VirtualMachine body: its host checked, what the store keeps of it ({"inner", "record"}); None for the
    other compute types. Runs outside any transaction: reaching a host takes seconds."""
    body = payload.obj(body, "body", required=True)
    outer = payload.obj(body.get("properties"), "properties", required=True)
    if outer.get("computeType") != COMPUTE_TYPE:
        return None
    spec = attached.parse(outer, payload.tags(body.get("tags")))
    try:
        facts = check(_access(spec))
    except HostCheckFailed as exc:
        raise ValidationFailed(f"The virtual machine could not be attached: {exc}.",
                               target=attached.target_of(spec, exc.part)) from exc
    record = {"resourceId": spec.resource_id, "engineUrl": spec.engine_url, "cpus": facts.cpus,
              "memoryBytes": facts.memory_bytes, "engineVersion": facts.engine_version, "os": facts.os,
              "hostKey": facts.host_key,
              "sealed": seal(secret, {"privateKey": spec.private_key, "password": spec.password}),
              "copiedImages": []}
    return {"inner": attached.stored_inner(spec), "record": record}


def access_of(row: Compute, secret: bytes) -> HostAccess:
    """How the controller reaches the attached host of `row`."""
    inner, record = row.body["properties"]["properties"], row.body["attached"]
    credentials = unseal(secret, record["sealed"])
    return HostAccess(address=inner["address"], ssh_port=inner["sshPort"],
                      username=inner["administratorAccount"]["username"], private_key=credentials["privateKey"],
                      password=credentials["password"], engine_url=record.get("engineUrl"),
                      host_key=record.get("hostKey"))


def arm_properties(row: Compute) -> dict:
    """The attached compute's own part of its ARM document."""
    return {"resourceId": row.body["attached"]["resourceId"], "isAttachedCompute": True}
