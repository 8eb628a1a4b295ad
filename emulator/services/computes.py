"""Compute use cases: validate, store, and leave the container work to the controller."""

from datetime import datetime

from emulator.domain import cluster, names, payload
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


def _validated(body: object, workspace: Workspace) -> tuple[dict, cluster.ClusterSpec]:
    body = payload.obj(body, "body", required=True)
    payload.finite(body)
    outer = payload.obj(body.get("properties"), "properties", required=True)
    compute_type = outer.get("computeType")
    if compute_type not in KNOWN_TYPES:
        raise ValidationFailed(f"properties.computeType must be one of {', '.join(KNOWN_TYPES)}; "
                               f"got {compute_type!r}.", target="properties.computeType")
    if compute_type not in EMULATED_TYPES:
        raise ValidationFailed(f"Compute type {compute_type} is not emulated by amlemu; "
                               f"supported: {', '.join(EMULATED_TYPES)}.", target="properties.computeType")
    inner = payload.obj(outer.get("properties"), "properties.properties")
    spec = cluster.parse_spec(inner)
    tags = payload.tags(body.get("tags"))
    location = workspace.location if body.get("location") is None else payload.location(body["location"])
    stored_inner = {**{k: v for k, v in inner.items() if v is not None},
                    "vmSize": spec.vm_size.name, "vmPriority": spec.priority, "osType": "Linux",
                    "scaleSettings": spec.scale.to_arm()}
    stored = {"location": location, "tags": tags, "identity": payload.obj(body.get("identity"), "identity") or None,
              "properties": {"computeType": compute_type,
                             "description": payload.string(outer.get("description"), "properties.description"),
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


def delete(repo: Repository, ref: WorkspaceRef, name: str, now: datetime) -> tuple[Compute, Operation] | None:
    row = repo.compute(ref.child_id("computes", name))
    if row is None:
        return None
    row.provisioning_state, row.modified_at = "Deleting", now
    return row, operations.start(repo, row.key, "Delete", now)


def patch_scale(repo: Repository, ref: WorkspaceRef, workspace: Workspace, name: str, body: object,
                now: datetime) -> tuple[Compute, Operation]:
    """PATCH with ClusterUpdateParameters: {"properties": {"properties": {"scaleSettings": {...}}}}."""
    target = "properties.properties.scaleSettings"
    outer = payload.obj(payload.obj(body, "body", required=True).get("properties"), "properties", required=True)
    scale = payload.obj(payload.obj(outer.get("properties"), "properties.properties", required=True)
                        .get("scaleSettings"), target, required=True)
    current = get(repo, ref, name).body
    merged = {**current, "properties": {**current["properties"], "properties": {
        **current["properties"]["properties"], "scaleSettings": scale}}}
    row, op, _ = put(repo, ref, workspace, name, merged, now)
    return row, op


def spec_of(row: Compute) -> cluster.ClusterSpec:
    return cluster.parse_spec(row.body["properties"]["properties"])
