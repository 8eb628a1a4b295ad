"""Compute instances: what a user may ask of one (create, update, start, stop, restart, delete), checked and
recorded on the compute row. The controller (controller/reconcilers/instances.py) brings the containers to
what the record says and finishes the operation.

The record (`Compute.instance`) holds the state and last operation, the Jupyter token, a generation that
every start or restart raises (containers of an older one go), the published ports once the container runs,
and the clocks of idle shutdown and of the schedules.
"""

import secrets
from dataclasses import dataclass
from datetime import datetime

from cryptography.hazmat.primitives.serialization import load_ssh_public_key

from emulator.domain import payload
from emulator.domain.compute import instance, schedules, vm_sizes
from emulator.domain.compute.instance import InstanceState, Trigger
from emulator.errors import ValidationFailed
from emulator.services import events
from emulator.store.tables import Compute

INNER = "properties.properties"
ADMIN_USER = "azureuser"
SSH_PORT = 50000  # Azure's compute-instance SSH port, inside the container
JUPYTER_PORT = 8888
# What a PUT on an existing instance may change (begin_update is a PUT); the rest is fixed at creation.
UPDATABLE = ("schedules", "idleTimeBeforeShutdown")


@dataclass(frozen=True)
class InstanceSpec:
    vm_size: vm_sizes.VmSize
    ssh_key: str | None  # the admin's public key when SSH is enabled
    idle_seconds: float | None  # platform seconds (before the time scale); None: idle shutdown off
    schedules: tuple[schedules.StartStop, ...]


def _ssh_key(inner: dict) -> str | None:
    target = f"{INNER}.sshSettings"
    ssh = payload.obj(inner.get("sshSettings"), target)
    access = ssh.get("sshPublicAccess") or "Disabled"
    if access not in ("Enabled", "Disabled"):
        raise ValidationFailed(f"{target}.sshPublicAccess must be Enabled or Disabled, got {access!r}.",
                               target=f"{target}.sshPublicAccess")
    if access == "Disabled":
        return None
    key = payload.string(ssh.get("adminPublicKey"), f"{target}.adminPublicKey")
    if not key:
        raise ValidationFailed(f"{target}.adminPublicKey is required when SSH public access is Enabled: give the "
                               "OpenSSH public key (ssh-ed25519 AAAA... or ssh-rsa AAAA...) to log in with.",
                               target=f"{target}.adminPublicKey")
    try:
        load_ssh_public_key(key.strip().encode())
    except (ValueError, TypeError) as exc:
        raise ValidationFailed(f"{target}.adminPublicKey is not an OpenSSH public key ({exc}).",
                               target=f"{target}.adminPublicKey") from exc
    return key.strip()


def parse_spec(inner: dict) -> InstanceSpec:
    """Validate the inner `properties` of a ComputeInstance PUT (as stored, or as sent)."""
    instance.validate_priority(inner)
    size_name = inner.get("vmSize") or "Standard_DS3_v2"
    size = vm_sizes.find(size_name) if isinstance(size_name, str) else None
    if size is None:
        raise ValidationFailed(
            f"VM size '{size_name}' is not supported. List the supported sizes with ml_client.compute.list_sizes().",
            target=f"{INNER}.vmSize")
    idle = instance.parse_idle_time(inner.get("idleTimeBeforeShutdown"))
    raw = payload.obj(inner.get("schedules"), f"{INNER}.schedules").get("computeStartStop")
    return InstanceSpec(size, _ssh_key(inner), idle, tuple(schedules.parse(raw or [])))


def validated_inner(inner: dict) -> tuple[dict, InstanceSpec]:
    """The inner properties to store (normalised) and the spec they make."""
    spec = parse_spec(inner)
    stored = {k: v for k, v in inner.items() if v is not None and k != "state"}
    stored["vmSize"] = spec.vm_size.name
    if spec.schedules:
        stored["schedules"] = {"computeStartStop": [s.to_arm() for s in spec.schedules]}
    return stored, spec


def check_update(row: Compute, new_inner: dict) -> None:
    old = row.body["properties"]["properties"]
    for key in sorted(set(old) | set(new_inner)):
        if key not in UPDATABLE and key != "state" and old.get(key) != new_inner.get(key):
            raise ValidationFailed(f"{key} of an existing compute instance cannot change; only "
                                   f"{' and '.join(UPDATABLE)} can. Delete and recreate it.",
                                   target=f"{INNER}.{key}")


def new_record(inner: dict, now: datetime) -> dict:
    """A new instance: Creating, and Running once its container answers; `state: "Stopped"` in the PUT makes it
    stop right after (the portal's "start after creation" switch turned off)."""
    state, operation = instance.create(now)
    return {"state": state.value, "lastOperation": operation.to_row(), "token": secrets.token_urlsafe(24),
            "generation": 1, "createStopped": inner.get("state") == InstanceState.STOPPED.value,
            "ports": {}, "ip": None, "idleSince": None, "schedulesAt": now.isoformat()}


def state_of(row: Compute) -> InstanceState:
    return InstanceState(row.instance["state"])


def ask(row: Compute, action: str, trigger: Trigger, now: datetime) -> bool:
    """Start an operation (Start, Stop, Restart, Delete) on the instance. A user's request that its state
    forbids is refused (InvalidTransition); a schedule's or idle shutdown's that has nothing to do is dropped.
    Returns whether an operation began."""
    began = instance.begin(action, state_of(row), trigger, now, name=row.name)
    if began is None:
        return False
    state, operation = began
    generation = row.instance.get("generation", 1) + (1 if action in ("Start", "Restart") else 0)
    change(row, now, state=state.value, lastOperation=operation.to_row(), idleSince=None, generation=generation)
    row.modified_at = now
    return True


def change(row: Compute, now: datetime, **fields) -> None:
    """Change the instance's record; a change of state that starts or stops its VM goes on the timeline in the same
    transaction (what the cost meter bills)."""
    before = row.instance.get("state")
    row.instance = {**row.instance, **fields}
    events.of_instance(row, before, now)


def set_idle_time(row: Compute, value: object, now: datetime) -> None:
    """POST updateIdleShutdownSetting: a new idle time (or none). A setting shorter than the time the instance
    has been idle restarts its idle clock."""
    seconds = instance.parse_idle_time(value)
    inner = dict(row.body["properties"]["properties"])
    old = instance.parse_idle_time(inner.get("idleTimeBeforeShutdown"))
    if value is None:
        inner.pop("idleTimeBeforeShutdown", None)
    else:
        inner["idleTimeBeforeShutdown"] = value
    row.body = {**row.body, "properties": {**row.body["properties"], "properties": inner}}
    since = row.instance.get("idleSince")
    since = instance.reset_on_change(old, seconds, datetime.fromisoformat(since) if since else None, now)
    row.instance = {**row.instance, "idleSince": since.isoformat() if since else None}
    row.modified_at = now


def arm_status(row: Compute) -> dict:
    """The read-only inner properties Azure reports for an instance."""
    record = row.instance or {}
    inner = row.body["properties"]["properties"]
    ports = record.get("ports") or {}
    jupyter = ports.get(str(JUPYTER_PORT))
    applications = []
    if jupyter:
        base = f"http://127.0.0.1:{jupyter}"
        token = record["token"]
        applications = [{"displayName": "Jupyter", "endpointUri": f"{base}/tree?token={token}"},
                        {"displayName": "Jupyter Lab", "endpointUri": f"{base}/lab?token={token}"}]
    ssh = dict(payload.obj(inner.get("sshSettings"), "sshSettings")) or {"sshPublicAccess": "Disabled"}
    ssh.update({"adminUserName": ADMIN_USER, "sshPort": int(ports[str(SSH_PORT)]) if ports.get(str(SSH_PORT))
                else None})
    return {"state": record.get("state"),
            "lastOperation": instance.LastOperation.from_row(record["lastOperation"]).to_arm()
            if record.get("lastOperation") else None,
            "connectivityEndpoints": {"publicIpAddress": "127.0.0.1", "privateIpAddress": record.get("ip")},
            "applications": applications, "sshSettings": ssh, "errors": record.get("errors"),
            "computeInstanceAuthorizationType": inner.get("computeInstanceAuthorizationType", "personal"),
            "applicationSharingPolicy": inner.get("applicationSharingPolicy", "Shared"),
            "osImageMetadata": {"currentImageVersion": "amlemu", "latestImageVersion": "amlemu",
                                "isLatestOsImageVersion": True}}
