"""The jobs step of a pass goes on whatever one job does: a job whose workspace was deleted while its image
builds, or whose preparation raises, holds up no other job."""

import threading
from datetime import UTC, datetime

from emulator.controller.effects import Effects
from emulator.controller.reconcilers.jobs import JobReconciler
from emulator.domain.ids import WorkspaceRef
from emulator.domain.jobs import artifacts
from emulator.settings import Settings
from emulator.store.tables import AssetVersion, Job
from tests.waiting import wait_until

NOW = datetime(2026, 11, 25, 12, 0, tzinfo=UTC)
WS = "/subscriptions/s/resourcegroups/rg/providers/microsoft.machinelearningservices/workspaces/gone"


def _job(repo, name: str, status: str, environment: str) -> None:
    env_key = f"{WS}/environments/{environment}/versions/1"
    if repo.asset_version(env_key) is None:
        repo.add(AssetVersion(key=env_key, workspace_key=WS, kind="environments", name=environment, version="1",
                              body={"properties": {"image": environment}}, created_at=NOW, modified_at=NOW))
    repo.add(Job(key=f"{WS}/jobs/{name}", workspace_key=WS, name=name, compute_key=f"{WS}/computes/c",
                 body={"environmentId": env_key}, status=status, created_at=NOW, modified_at=NOW,
                 status_changed_at=NOW))


def test_a_job_of_a_deleted_workspace_mid_build_or_a_raising_one_holds_up_no_other(store, tmp_path):
    release = threading.Event()

    def prepare(environment, progress):
        progress("building")
        release.wait(10)
        return None

    def cached(environment):
        if environment["properties"]["image"] == "broken":
            raise RuntimeError("the resolver fell over")
        return None

    reconciler = JobReconciler(Settings(data_dir=tmp_path), prepare, cached)
    with store.transaction() as repo:  # no workspace row: deleted
        _job(repo, "building", "Preparing", "slow")
        _job(repo, "raising", "Preparing", "broken")
        _job(repo, "done", "Finalizing", "slow")
    for _ in range(2):
        with store.transaction() as repo:
            reconciler.tick(repo, NOW, Effects())
    release.set()
    with store.transaction() as repo:
        states = {j.name: j.status for j in repo.jobs(WS)}
    assert states == {"building": "Preparing", "raising": "Preparing", "done": "Completed"}
    build_log = tmp_path / artifacts.directory(WorkspaceRef.from_key(WS), "building") / artifacts.BUILD_LOG
    wait_until(lambda: build_log.exists() and build_log.read_text() == "building\n", timeout=10,
               message="the build's log where the job's artifacts are, its workspace gone or not")
    assert "raising" in next(iter(reconciler.steps.failing))


def test_what_a_raising_preparation_changed_is_undone_and_the_rest_of_the_pass_kept(store, tmp_path):
    def cached(environment):
        raise RuntimeError("the resolver fell over")

    reconciler = JobReconciler(Settings(data_dir=tmp_path), lambda *_: None, cached)
    with store.transaction() as repo:
        _job(repo, "half-way", "NotStarted", "broken")
        _job(repo, "done", "Finalizing", "broken")
    with store.transaction() as repo:
        reconciler.tick(repo, NOW, Effects())
    with store.transaction() as repo:
        jobs = {j.name: (j.status, len(j.history)) for j in repo.jobs(WS)}
    assert jobs == {"half-way": ("NotStarted", 0), "done": ("Completed", 1)}  # no half-made Starting/Preparing
