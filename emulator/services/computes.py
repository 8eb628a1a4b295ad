"""Compute use cases: validate, store, and leave the container work to the controller."""

from datetime import datetime

from emulator.domain import cluster, names
from emulator.domain.ids import WorkspaceRef
from emulator.errors import Conflict, NotFound, ValidationFailed
from emulator.services import operations
from emulator.store.repositories import Repository
from emulator.store.tables import Compute, Operation, Workspace

KNOWN_TYPES = ("AKS", "Kubernetes", "AmlCompute", "ComputeInstance", "DataFactory", "VirtualMachine",
               "HDInsight", "Databricks", "DataLakeAnalytics", "SynapseSpark")
EMULATED_TYPES = ("AmlCompute",)


def get(repo: Repository, ref: WorkspaceRef, name: str) -> Compute:
    row = repo.compute(ref.child_id("computes", name))
    if row is None:
        raise NotFound(f"Compute '{name}' was not found in workspace '{ref.name}'.", target="computeName")
    return row


def _object(value: object, target: str, required: bool = False) -> dict:
    if value is None and not required:
        return {}
    if not isinstance(value, dict):
        raise ValidationFailed(f"{target} must be an object.", target=target)
    return value


def _string(value: object, target: str) -> str | None:
    if value is not None and not isinstance(value, str):
        raise ValidationFailed(f"{target} must be a string.", target=target)
    return value


def _validated(body: object, workspace: Workspace) -> tuple[dict, cluster.ClusterSpec]:
    body = _object(body, "body", required=True)
    outer = _object(body.get("properties"), "properties", required=True)
    compute_type = outer.get("computeType")
    if compute_type not in KNOWN_TYPES:
        raise ValidationFailed(f"properties.computeType must be one of {', '.join(KNOWN_TYPES)}; "
                               f"got {compute_type!r}.", target="properties.computeType")
    if compute_type not in EMULATED_TYPES:
        raise ValidationFailed(f"Compute type {compute_type} is not emulated by amlemu; "
                               f"supported: {', '.join(EMULATED_TYPES)}.", target="properties.computeType")
    inner = _object(outer.get("properties"), "properties.properties")
    spec = cluster.parse_spec(inner)
    tags = _object(body.get("tags"), "tags")
    if not all(isinstance(v, str) for v in tags.values()):
        raise ValidationFailed("tags must be an object of strings.", target="tags")
    location = _string(body.get("location"), "location") or workspace.location
    stored_inner = {**{k: v for k, v in inner.items() if v is not None},
                    "vmSize": spec.vm_size.name, "vmPriority": spec.priority, "osType": "Linux",
                    "scaleSettings": spec.scale.to_arm()}
    stored = {"location": location, "tags": tags,
              "identity": body.get("identity") if isinstance(body.get("identity"), dict) else None,
              "properties": {"computeType": compute_type,
                             "description": _string(outer.get("description"), "properties.description"),
                             "disableLocalAuth": bool(outer.get("disableLocalAuth", True)),
                             "properties": stored_inner}}
    return stored, spec


def _check_update(row: Compute, stored: dict) -> None:
    if row.provisioning_state == "Deleting":
        raise Conflict(f"Compute '{row.name}' is being deleted; wait for the deletion to finish.",
                       target="computeName")
    if row.compute_type != stored["properties"]["computeType"]:
        raise Conflict(f"Compute '{row.name}' already exists with type {row.compute_type}.",
                       target="properties.computeType")
    old, new = row.body["properties"]["properties"], stored["properties"]["properties"]
    for key in ("vmSize", "vmPriority"):
        if old[key] != new[key]:
            raise ValidationFailed(f"{key} of an existing cluster cannot change ({old[key]} -> {new[key]}); "
                                   "delete and recreate it.", target=f"properties.properties.{key}")


def put(repo: Repository, ref: WorkspaceRef, workspace: Workspace, name: str, body: object,
        now: datetime) -> tuple[Compute, Operation, bool]:
    names.compute_name(name)
    stored, _spec = _validated(body, workspace)
    key = ref.child_id("computes", name).lower()
    row = repo.compute(key)
    if row is None:
        row = Compute(key=key, workspace_key=ref.key, name=name, compute_type=stored["properties"]["computeType"],
                      location=stored["location"], body=stored, provisioning_state="Creating",
                      created_at=now, modified_at=now, allocation_changed_at=now)
        repo.add(row)
        return row, operations.start(repo, key, "Create", now), True
    _check_update(row, stored)
    row.body, row.modified_at, row.provisioning_state = stored, now, "Updating"
    return row, operations.start(repo, key, "Update", now), False


def delete(repo: Repository, ref: WorkspaceRef, name: str, now: datetime) -> Operation | None:
    row = repo.compute(ref.child_id("computes", name))
    if row is None:
        return None
    row.provisioning_state, row.modified_at = "Deleting", now
    return operations.start(repo, row.key, "Delete", now)


def spec_of(row: Compute) -> cluster.ClusterSpec:
    return cluster.parse_spec(row.body["properties"]["properties"])
