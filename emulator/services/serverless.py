"""Serverless compute: the hidden cluster a job that names no compute runs on, made on its first job and grown as
far as the quota lets a job ask. The controller runs it like any cluster: nodes come for queued jobs and go after
two idle minutes, low-priority ones are preempted."""

from datetime import datetime

from emulator.domain.compute import serverless
from emulator.domain.ids import WorkspaceRef
from emulator.services import usage
from emulator.store.repositories import Repository
from emulator.store.tables import Compute, Workspace


def cluster_for(repo: Repository, ref: WorkspaceRef, workspace: Workspace, capacity: serverless.Capacity,
                instance_count: int, now: datetime, target: str) -> Compute:
    quota = usage.LOW_PRIORITY_LIMIT if capacity.priority == "LowPriority" else usage.DEDICATED_FAMILY_LIMIT
    nodes = serverless.max_nodes(capacity, quota, instance_count, target)
    key = ref.child_id("computes", capacity.cluster_name).lower()
    row = repo.compute(key)
    if row is None:
        row = Compute(key=key, workspace_key=ref.key, name=capacity.cluster_name, compute_type="AmlCompute",
                      location=workspace.location, body=serverless.cluster_body(capacity, workspace.location, nodes),
                      provisioning_state="Succeeded", created_at=now, modified_at=now, allocation_changed_at=now)
        repo.add(row)
    return row
