"""Local compute: the hidden capacity a `compute="local"` job runs on, the emulator's machine, made on the
workspace's first local job (services/jobs.py starts the run when its client asks). Rules: domain/compute/local.py."""

import os
from datetime import datetime

from emulator.domain.compute import local
from emulator.domain.ids import WorkspaceRef
from emulator.store.repositories import Repository
from emulator.store.tables import Compute, Workspace

GIB = 2**30


def machine() -> tuple[int, float]:
    """(cores, memory GiB) of the machine the emulator runs on."""
    try:
        memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / GIB
    except (ValueError, OSError, AttributeError):  # a platform without these
        memory = 1.0
    return os.cpu_count() or 1, round(memory, 1)


def capacity_for(repo: Repository, ref: WorkspaceRef, workspace: Workspace, now: datetime) -> Compute:
    """The workspace's local capacity, made on its first local job."""
    key = ref.child_id("computes", local.CLUSTER_NAME).lower()
    row = repo.compute(key)
    if row is None:
        row = Compute(key=key, workspace_key=ref.key, name=local.CLUSTER_NAME, compute_type="AmlCompute",
                      location=workspace.location, body=local.cluster_body(workspace.location, *machine()),
                      provisioning_state="Succeeded", created_at=now, modified_at=now, allocation_changed_at=now)
        repo.add(row)
    return row
