"""A one-node job whose attempt finished well just as its node was lost: the report, coming after the loss was
seen and the job requeued, makes the finished attempt stand instead of a second run. Anything else from an
older attempt stays stale."""

from datetime import UTC, datetime

import pytest

from emulator.controller.effects import Effects
from emulator.controller.reconcilers.jobs import JobReconciler
from emulator.settings import Settings
from emulator.store.db import Store
from emulator.store.tables import Job

NOW = datetime(2026, 11, 23, 12, 0, tzinfo=UTC)
KEY = "/subscriptions/s/resourcegroups/rg/providers/microsoft.machinelearningservices/workspaces/ws/jobs/j1"


def _requeued_job(store: Store, instances: int = 1, ranks: dict | None = None) -> None:
    """Attempt 1 was running when its node was lost: the job is Queued as attempt 2."""
    with store.transaction() as repo:
        repo.add(Job(key=KEY, workspace_key=KEY.rsplit("/jobs/", 1)[0], name="j1", compute_key="c",
                     body={"resources": {"instanceCount": instances}}, status="Queued", created_at=NOW,
                     modified_at=NOW, status_changed_at=NOW, queued_at=NOW, attempt=2, ranks=ranks or {},
                     history=[{"status": "Running", "attempt": 1}, {"status": "Queued", "attempt": 2}]))


def _report(store: Store, **event) -> tuple[Job, Effects]:
    reconciler, effects = JobReconciler(Settings(), lambda *_: None, lambda _: None), Effects()
    with store.transaction() as repo:
        reconciler.apply_event(repo, {"kind": "ended", "job": KEY, "node": "gone", "rank": 0, "tail": "",
                                      "oom": False, "error": None, **event}, NOW, effects)
        job = repo.job(KEY)
    return job, effects


def test_a_late_success_of_the_previous_attempt_stands(store):
    _requeued_job(store)
    job, effects = _report(store, attempt=1, exit_code=0)
    assert job.status == "Finalizing" and job.ranks["0"]["exit_code"] == 0
    assert "its result stands" in job.history[-2]["message"]
    assert KEY in effects.clear and KEY in effects.stop_jobs  # attempt 2 is called off


@pytest.mark.parametrize(("event", "instances", "ranks"), [
    ({"attempt": 1, "exit_code": 3}, 1, None),  # it failed: the rerun goes ahead
    ({"attempt": 1, "exit_code": None}, 1, None),  # called off before it ran: no result
    ({"attempt": 1, "exit_code": 0, "error": "no image"}, 1, None),
    ({"attempt": 1, "exit_code": 0}, 2, None),  # one rank of several proves nothing
    ({"attempt": 1, "exit_code": 0}, 1, {"0": {"state": "running"}}),  # attempt 2 already runs
])
def test_anything_else_from_an_older_attempt_is_stale(store, event, instances, ranks):
    _requeued_job(store, instances, ranks)
    job, effects = _report(store, **event)
    assert job.status == "Queued" and job.attempt == 2 and not effects.clear
