"""Deleting a workspace deletes what is in it, as in Azure. What runs in containers is marked for the controller
(computes and online endpoints Deleting, live jobs cancelled); the controller then removes the containers, and
forgets the jobs with their files once they have ended (controller/reconcilers/deleted_workspaces.py). Asset
versions, job schedules and batch endpoints go at once."""

from datetime import datetime

from emulator.domain.ids import WorkspaceRef
from emulator.domain.jobs.status import JobStatus, on_cancel
from emulator.services import batch_endpoints, computes, endpoints, workspaces
from emulator.services.jobs import transition
from emulator.store.repositories import Repository


def delete(repo: Repository, ref: WorkspaceRef, now: datetime) -> bool:
    """False when there was no such workspace."""
    if repo.workspace(ref.key) is None:
        return False
    for compute in repo.computes(ref.key):  # an instance is asked to Delete, as its own DELETE would
        computes.delete(repo, ref, compute.name, now)
    for endpoint in repo.online_endpoints(ref.key):
        endpoints.delete_endpoint(repo, ref, endpoint.name, now)
    for batch in repo.batch_endpoints(ref.key):  # nothing runs there: its jobs are cancelled below
        batch_endpoints.delete_endpoint(repo, ref, batch.name, now)
    for job in repo.jobs(ref.key):
        target = on_cancel(JobStatus(job.status))
        if target.value != job.status:
            transition(job, target, now, "The workspace was deleted.")
    for asset in repo.all_asset_versions(ref.key):
        repo.remove(asset)
    for schedule in repo.schedules(ref.key):  # nothing more fires there
        repo.remove(schedule)
    for assignment in repo.role_assignments(ref.key):  # a workspace made again under its name grants nothing
        repo.remove(assignment)
    return workspaces.delete(repo, ref, now)
