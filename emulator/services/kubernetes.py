"""Kubernetes compute: attach (checked, stored as given), and where its jobs run: on the cluster the user's kubeconfig
reaches (controller/reconcilers/pods.py), else on the local runtime, one hidden cluster per instance type that the
controller scales like any cluster (no quota, no cost: attached compute is the user's own). Rules:
domain/compute/kubernetes.py."""

from datetime import datetime
from pathlib import Path

from emulator.domain.compute import kubernetes
from emulator.domain.ids import WorkspaceRef
from emulator.domain.jobs.command_job import P
from emulator.errors import Conflict, ValidationFailed
from emulator.runtime import kube
from emulator.services import operations
from emulator.store.repositories import Repository
from emulator.store.tables import Compute, Operation, Workspace

FALLBACK = "LocalRuntime"
CONNECTED = "Kubeconfig"


def kubeconfig_path(data_dir: Path, resource_id: str) -> Path:
    """Where a user puts a cluster's kubeconfig: a folder named after its resource id, under the data directory:
    {data_dir}/kubernetes/{subscription}/{resourceGroup}/{clusterName}/kubeconfig (lower case)."""
    parts = resource_id.strip("/").lower().split("/")
    if any(part in (".", "..") for part in parts):  # refused at attach (domain/compute/kubernetes.py); never followed
        raise ValueError(f"not a cluster's resource id: {resource_id!r}")
    return data_dir / "kubernetes" / parts[1] / parts[3] / parts[-1] / "kubeconfig"


def kubeconfig_for(data_dir: Path, resource_id: str) -> Path | None:
    path = kubeconfig_path(data_dir, resource_id)
    return path if path.is_file() else None


def spec_of(row: Compute) -> kubernetes.KubernetesSpec:
    outer = row.body["properties"]
    return kubernetes.parse(outer, outer.get("properties") or {})


def validated(outer: dict, inner: dict, data_dir: Path) -> dict:
    """The inner properties to store; with a kubeconfig, the namespace must exist on the cluster (Azure: "The
    namespace must be created in the Kubernetes cluster before the cluster can be attached")."""
    spec = kubernetes.parse(outer, inner)
    config = kubeconfig_for(data_dir, spec.resource_id)
    if config is not None:
        try:
            found = kube.Cluster(config).namespace_exists(spec.namespace)
        except kube.Unreachable as exc:
            raise ValidationFailed(f"The Kubernetes API server of {spec.resource_id} could not be reached with "
                                   f"{config}: {exc}", target="properties.resourceId") from exc
        if not found:
            raise ValidationFailed(f"Namespace '{spec.namespace}' does not exist in cluster {spec.cluster_name}: "
                                   "create it first (kubectl create namespace), then attach.",
                                   target=f"{kubernetes.T}.namespace")
    stored = {k: v for k, v in inner.items() if v is not None}
    return {**stored, "namespace": spec.namespace, "defaultInstanceType": spec.default_instance_type}


def runs_on(data_dir: Path, resource_id: str) -> str:
    return CONNECTED if kubeconfig_for(data_dir, resource_id) else FALLBACK


def status_text(data_dir: Path, resource_id: str) -> str:
    """What the compute's description says about where its work runs."""
    if runs_on(data_dir, resource_id) == CONNECTED:
        return (f"amlemu: jobs and model servers run as pods on {resource_id} "
                f"(kubeconfig {kubeconfig_path(data_dir, resource_id)})")
    return (f"amlemu: no kubeconfig for {resource_id}: running on the local runtime (put one at "
            f"{kubeconfig_path(data_dir, resource_id)} to run on the cluster)")


def capacity_for(repo: Repository, ref: WorkspaceRef, workspace: Workspace, row: Compute, asked: object,
                 target: str, now: datetime) -> tuple[Compute, str]:
    """The hidden cluster an instance type of `row` runs on locally, made on its first job (its limits follow the
    compute's latest attach), and the note its jobs' logs begin with."""
    spec = spec_of(row)
    chosen = spec.resolve(asked, target)
    body = kubernetes.fallback_body(workspace.location, row.name, spec, chosen)
    key = ref.child_id("computes", kubernetes.fallback_cluster_name(row.name, chosen.name)).lower()
    capacity = repo.compute(key)
    if capacity is None:
        capacity = Compute(key=key, workspace_key=ref.key, name=kubernetes.fallback_cluster_name(row.name, chosen.name),
                           compute_type="AmlCompute", location=workspace.location, body=body,
                           provisioning_state="Succeeded", created_at=now, modified_at=now, allocation_changed_at=now)
        repo.add(capacity)
    elif capacity.body != body:
        capacity.body, capacity.modified_at = body, now
    return capacity, kubernetes.fallback_note(spec, chosen)


def detach(repo: Repository, row: Compute, now: datetime) -> Operation:
    """Detach at once: the row goes, and each hidden cluster that stood in for it is deleted by the controller (its
    nodes removed); pods already sent to a real cluster are left to it, as Azure leaves the cluster as it was."""
    for capacity in repo.computes(row.workspace_key):
        if kubernetes.is_fallback(capacity.name) and attached_name(capacity) == row.name:
            capacity.provisioning_state, capacity.modified_at = "Deleting", now
            operations.start(repo, capacity.key, "Delete", now)
    op = operations.start(repo, row.key, "Delete", now)
    op.status, op.finished_at = "Succeeded", now
    repo.remove(row)
    return op


def attached_name(capacity: Compute) -> str:
    return capacity.body["properties"]["properties"]["kubernetes"]["compute"]


def job_target(repo: Repository, ref: WorkspaceRef, workspace: Workspace, row: Compute, props: dict,
               instance_count: int, data_dir: Path | None, now: datetime) -> Compute:
    """Where a job submitted to Kubernetes compute `row` waits: the compute itself when a kubeconfig reaches its
    cluster (a pod runs it: controller/reconcilers/pods.py), else its instance type's cluster on the local runtime."""
    target = f"{P}.resources.instanceType"
    asked = (props.get("resources") or {}).get("instanceType")
    if data_dir is not None and kubeconfig_for(data_dir, row.body["properties"]["resourceId"]):
        spec_of(row).resolve(asked, target)
        if instance_count != 1:
            raise ValidationFailed("amlemu runs a job on a Kubernetes cluster as one pod: resources.instanceCount "
                                   f"must be 1 there, got {instance_count}.", target=f"{P}.resources.instanceCount")
        return row
    capacity, _note = capacity_for(repo, ref, workspace, row, asked, target, now)
    if capacity.provisioning_state == "Deleting":
        raise Conflict(f"Kubernetes compute '{row.name}' was detached a moment ago and its local runtime is still "
                       "being removed; submit again in a few seconds.", target=f"{P}.computeId")
    return capacity


def endpoint_compute(repo: Repository, ref: WorkspaceRef, value: object) -> str | None:
    """The ARM id of the Kubernetes compute an online endpoint names (by name or id), or None for a managed one."""
    if value is None or value == "":
        return None
    name = value.rstrip("/").rsplit("/", 1)[-1] if isinstance(value, str) else ""
    row = repo.compute(ref.child_id("computes", name)) if name else None
    if row is None or row.compute_type != "Kubernetes":
        raise ValidationFailed(f"{P}.compute must name a Kubernetes compute attached to workspace '{ref.name}', got "
                               f"{value!r}.", target=f"{P}.compute")
    return f"{ref.arm_id}/computes/{row.name}"


def endpoint_spec(repo: Repository, workspace_key: str, endpoint_body: dict) -> kubernetes.KubernetesSpec | None:
    """The Kubernetes compute an online endpoint runs on (None: a managed endpoint). Its model servers are pods on the
    cluster its kubeconfig reaches (controller/serving_pods.py), else containers on the local runtime."""
    compute = endpoint_body[P].get("compute")
    if not compute:
        return None
    row = repo.compute(f"{workspace_key}/computes/{compute.rsplit('/', 1)[-1]}".lower())
    if row is None:
        raise ValidationFailed(f"The endpoint's Kubernetes compute {compute} was detached.", target=f"{P}.compute")
    return spec_of(row)
