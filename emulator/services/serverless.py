"""Serverless compute: the hidden cluster a job that names no compute runs on, made on its first job and grown as
far as the quota lets a job ask. The controller runs it like any cluster: nodes come for queued jobs and go after
two idle minutes, low-priority ones are preempted."""

from datetime import datetime

from emulator.domain.compute import serverless
from emulator.domain.compute.quota import Limits
from emulator.domain.ids import WorkspaceRef
from emulator.store.repositories import Repository
from emulator.store.tables import Compute, Workspace


def cluster_for(repo: Repository, ref: WorkspaceRef, workspace: Workspace, capacity: serverless.Capacity,
                instance_count: int, now: datetime, target: str) -> Compute:
    # Sized by Azure's default quota; the quota in force (services/quotas.py) still limits how far it grows.
    quota = Limits().low_priority if capacity.priority == "LowPriority" else Limits().family
    nodes = serverless.max_nodes(capacity, quota, instance_count, target)
    key = ref.child_id("computes", capacity.cluster_name).lower()
    row = repo.compute(key)
    if row is None:
        row = Compute(key=key, workspace_key=ref.key, name=capacity.cluster_name, compute_type="AmlCompute",
                      location=workspace.location, body=serverless.cluster_body(capacity, workspace.location, nodes),
                      provisioning_state="Succeeded", created_at=now, modified_at=now, allocation_changed_at=now)
        repo.add(row)
    return row
