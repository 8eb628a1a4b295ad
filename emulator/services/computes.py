"""Compute use cases: validate, store, and leave the container work to the controller."""

from datetime import datetime
from pathlib import Path

from emulator.domain import names, payload
from emulator.domain.compute import cluster, kubernetes, local, placement
from emulator.domain.ids import WorkspaceRef
from emulator.errors import Conflict, NotFound, ValidationFailed
from emulator.services import events, instances, operations
from emulator.services import kubernetes as kubernetes_compute
from emulator.store.repositories import Repository
from emulator.store.tables import Compute, Operation, Workspace

KNOWN_TYPES = ("AKS", "Kubernetes", "AmlCompute", "ComputeInstance", "DataFactory", "VirtualMachine",
               "HDInsight", "Databricks", "DataLakeAnalytics", "SynapseSpark")
EMULATED_TYPES = ("AmlCompute", "ComputeInstance", "VirtualMachine")
ATTACHABLE_TYPES = ("Kubernetes",)  # attached without a host check: no quota, no cost (services/kubernetes.py)


def get(repo: Repository, ref: WorkspaceRef, name: str, serverless_too: bool = False) -> Compute:
    """`serverless_too`: a serverless job's hidden cluster may be named too (the emulator's own routes); ARM's
    compute routes never show one, as Azure lists no serverless compute."""
    row = repo.compute(ref.child_id("computes", name))
    if row is None or (local.is_hidden(row.name) and not serverless_too):
        raise NotFound(f"Compute '{name}' was not found in workspace '{ref.name}'.", target="computeName")
    return row


def _cluster_inner(inner: dict) -> dict:
    spec = cluster.parse_spec(inner)
    return {**{k: v for k, v in inner.items() if v is not None},
            "vmSize": spec.vm_size.name, "vmPriority": spec.priority, "osType": "Linux",
            "scaleSettings": spec.scale.to_arm()}


def _validated(body: object, workspace: Workspace, attachment: dict | None, data_dir: Path) -> dict:
    body = payload.obj(body, "body", required=True)
    payload.finite(body)
    outer = payload.obj(body.get("properties"), "properties", required=True)
    compute_type = outer.get("computeType")
    if compute_type not in KNOWN_TYPES:
        raise ValidationFailed(f"properties.computeType must be one of {', '.join(KNOWN_TYPES)}; "
                               f"got {compute_type!r}.", target="properties.computeType")
    if compute_type not in (*EMULATED_TYPES, *ATTACHABLE_TYPES):
        raise ValidationFailed(f"Compute type {compute_type} is not emulated by amlemu; "
                               f"supported: {', '.join((*EMULATED_TYPES, *ATTACHABLE_TYPES))}.",
                               target="properties.computeType")
    inner = payload.obj(outer.get("properties"), "properties.properties")
    attached = {}
    if compute_type == "ComputeInstance":
        stored_inner, _spec = instances.validated_inner(inner)
    elif compute_type == "Kubernetes":
        stored_inner = kubernetes_compute.validated(outer, inner, data_dir)
        attached = {"resourceId": outer["resourceId"]}
    elif compute_type == "VirtualMachine":  # checked beforehand, outside the transaction (services/attached.py)
        stored_inner = attachment["inner"]
    else:
        stored_inner = _cluster_inner(inner)
    tags = payload.tags(body.get("tags"))
    location = workspace.location if body.get("location") is None else payload.location(body["location"])
    stored = {"location": location, "tags": tags, "identity": payload.obj(body.get("identity"), "identity") or None,
              "properties": {"computeType": compute_type,
                             "description": payload.string(outer.get("description"), "properties.description"),
                             "disableLocalAuth": bool(outer.get("disableLocalAuth", True)),
                             **attached, "properties": stored_inner}}
    if attachment:  # the host's record, its sealed credentials with it: never shown
        stored["attached"] = attachment["record"]
    return stored


def _check_update(row: Compute, stored: dict) -> None:
    if row.provisioning_state == "Deleting":
        raise Conflict(f"Compute '{row.name}' is being deleted; wait for the deletion to finish.",
                       target="computeName")
    if row.compute_type != stored["properties"]["computeType"]:
        raise Conflict(f"Compute '{row.name}' already exists with type {row.compute_type}.",
                       target="properties.computeType")
    old, new = row.body["properties"]["properties"], stored["properties"]["properties"]
    if row.compute_type == "ComputeInstance":
        instances.check_update(row, new)
        return
    if row.compute_type in ATTACHABLE_TYPES:
        if row.body["properties"]["resourceId"].lower() != stored["properties"]["resourceId"].lower():
            raise Conflict(f"Compute '{row.name}' is attached to {row.body['properties']['resourceId']}; detach it "
                           "before attaching another cluster under its name.", target="properties.resourceId")
        return
    for key in ("vmSize", "vmPriority"):
        if old[key] != new[key]:
            raise ValidationFailed(f"{key} of an existing cluster cannot change ({old[key]} -> {new[key]}); "
                                   "delete and recreate it.", target=f"properties.properties.{key}")


def _check_pool(repo: Repository, ref: WorkspaceRef, tags: dict | None) -> None:
    """A cluster's host pool names attached VirtualMachine computes of its workspace (domain/compute/placement.py)."""
    target = f"tags.{placement.POOL_TAG}"
    for host in placement.pool_of(tags):
        row = repo.compute(ref.child_id("computes", host).lower())
        if row is None or row.compute_type != "VirtualMachine" or row.provisioning_state != "Succeeded":
            raise ValidationFailed(f"{target} names {host!r}, which is not an attached VirtualMachine compute of "
                                   f"workspace {ref.name}: attach the host first (az ml compute attach "
                                   "--type virtualmachine), then name it here.", target=target)


def put(repo: Repository, ref: WorkspaceRef, workspace: Workspace, name: str, body: object,
        now: datetime, attachment: dict | None = None, data_dir: Path = Path("/nonexistent")
        ) -> tuple[Compute, Operation, bool]:
    """`attachment`: a VirtualMachine's checked host (services/attached.py `checked`); `data_dir`: where users leave
    kubeconfigs for attached Kubernetes clusters (services/kubernetes.py)."""
    names.compute_name(name)
    stored = _validated(body, workspace, attachment, data_dir)
    if stored["properties"]["computeType"] == "AmlCompute":
        _check_pool(repo, ref, stored["tags"])
    key = ref.child_id("computes", name).lower()
    row = repo.compute(key)
    if row is None:
        compute_type = stored["properties"]["computeType"]
        sent_inner = payload.obj(payload.obj(body, "body").get("properties"), "properties").get("properties") or {}
        row = Compute(key=key, workspace_key=ref.key, name=name, compute_type=compute_type,
                      location=stored["location"], body=stored, provisioning_state="Creating",
                      created_at=now, modified_at=now, allocation_changed_at=now,
                      instance=instances.new_record(sent_inner, now) if compute_type == "ComputeInstance" else None)
        repo.add(row)
        if row.instance:
            events.of_instance(row, None, now)  # its VM is billed from now
        op = operations.start(repo, key, "Create", now)
        if attachment or compute_type in ATTACHABLE_TYPES:  # attached: nothing to provision
            row.provisioning_state, op.status, op.finished_at = "Succeeded", "Succeeded", now
        return row, op, True
    if row.compute_type == "VirtualMachine" or attachment:
        raise Conflict(f"Compute '{row.name}' already exists; detach it before attaching again.",
                       target="computeName")
    _check_update(row, stored)
    row.body, row.modified_at = stored, now
    op = operations.start(repo, key, "Update", now)
    if row.compute_type in ("ComputeInstance", *ATTACHABLE_TYPES):  # in force from the controller's next pass
        op.status, op.finished_at = "Succeeded", now
    else:  # the controller resizes the cluster, then finishes the operation
        row.provisioning_state = "Updating"
    return row, op, False


def delete(repo: Repository, ref: WorkspaceRef, name: str, now: datetime) -> tuple[Compute, Operation] | None:
    row = repo.compute(ref.child_id("computes", name))
    if row is None or local.is_hidden(row.name):
        return None
    if row.compute_type in ATTACHABLE_TYPES:  # detach: the cluster stays as it was; its local stand-ins go
        return row, kubernetes_compute.detach(repo, row, now)
    if row.compute_type == "ComputeInstance" and row.provisioning_state != "Deleting":
        instances.ask(row, "Delete", instances.Trigger.USER, now)
    row.provisioning_state, row.modified_at = "Deleting", now
    return row, operations.start(repo, row.key, "Delete", now)


def act(repo: Repository, ref: WorkspaceRef, name: str, action: str, now: datetime) -> tuple[Compute, Operation]:
    """POST start, stop or restart: compute instances only."""
    row = get(repo, ref, name)
    if row.compute_type != "ComputeInstance":
        raise ValidationFailed(f"{action} applies to compute instances; '{name}' is a {row.compute_type}. "
                               "A cluster scales itself: change its minNodeCount and maxNodeCount instead.",
                               target="computeName")
    instances.ask(row, action, instances.Trigger.USER, now)
    return row, operations.start(repo, row.key, action, now)


def update_idle_shutdown(repo: Repository, ref: WorkspaceRef, name: str, body: object, now: datetime) -> Compute:
    """POST updateIdleShutdownSetting {"idleTimeBeforeShutdown": "PT30M"}."""
    row = get(repo, ref, name)
    if row.compute_type != "ComputeInstance":
        raise ValidationFailed(f"Idle shutdown applies to compute instances; '{name}' is a {row.compute_type}.",
                               target="computeName")
    instances.set_idle_time(row, payload.obj(body, "body", required=True).get("idleTimeBeforeShutdown"), now)
    return row


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
    props = row.body["properties"]["properties"]
    if kubernetes.is_fallback(row.name):  # a Kubernetes compute's instance type on the local runtime
        return cluster.ClusterSpec(kubernetes.fallback_size(props), "Dedicated", cluster.parse_scale(props.get("scaleSettings")))
    return cluster.parse_spec(props, local.is_local_compute(row.name))
