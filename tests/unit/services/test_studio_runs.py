"""What the Studio's job page reads of MLflow: metrics by step and params, a sweep's best trial values, an ended job's
run read once however often its open page asks, and a tracking server that does not answer said, not raised."""

from datetime import UTC, datetime

from emulator.domain.ids import WorkspaceRef
from emulator.errors import RuntimeUnavailable
from emulator.services.studio_runs import StudioRuns
from emulator.store.db import Store
from emulator.store.tables import Job, TrackedRun

REF = WorkspaceRef("00000000-0000-0000-0000-000000000000", "rg", "ws")
NOW = datetime(2026, 1, 1, tzinfo=UTC)


class Tracking:
    """An MLflow server's two reads, counted; `down` makes it fail as an unreachable one does."""

    def __init__(self, history: dict[str, dict[str, list[tuple[int, float]]]]):
        self.history, self.calls, self.down = history, 0, False

    def run_data(self, workspace: str, run_id: str) -> dict:
        self.calls += 1
        if self.down:
            raise RuntimeUnavailable("The MLflow tracking server did not answer.")
        return {"metrics": [{"key": k, "value": v[-1][1]} for k, v in self.history[run_id].items()],
                "params": [{"key": "lr", "value": "0.1"}]}

    def metric_points(self, workspace: str, run_id: str, key: str) -> list[tuple[int, float]]:
        self.calls += 1
        return self.history[run_id][key]


def _runs(tmp_path, database_url, history) -> tuple[StudioRuns, Tracking, dict[str, Job]]:
    store, server = Store(database_url), Tracking(history)
    jobs = {}
    with store.transaction() as repo:
        for name in history:
            key = REF.child_id("jobs", name).lower()
            jobs[name] = Job(key=key, workspace_key=REF.key, name=name, compute_key="c", body={}, status="Running",
                             created_at=NOW, modified_at=NOW, status_changed_at=NOW)
            repo.add(jobs[name])
            repo.add(TrackedRun(key=key, workspace_key=REF.key, run_id=name, experiment_id="1", created_at=NOW))
    return StudioRuns(tmp_path, store, server), server, jobs


def test_metrics_by_step_and_params_are_read_again_until_the_job_ends(tmp_path, database_url):
    runs, server, jobs = _runs(tmp_path, database_url, {"a": {"loss": [(0, 1.0), (1, 0.5)], "acc": [(0, 0.7)]}})
    data = runs.run_data(jobs["a"])
    assert data.metrics == {"acc": [(0, 0.7)], "loss": [(0, 1.0), (1, 0.5)]} and data.params == {"lr": "0.1"}
    runs.run_data(jobs["a"])
    assert server.calls == 6  # running: read on every tick of its page
    jobs["a"].ended_at = NOW
    assert runs.run_data(jobs["a"]) == runs.run_data(jobs["a"]) == data
    assert server.calls == 9  # ended: read once more, then kept


def test_a_sweeps_trials_give_their_best_value_and_a_silent_server_is_said(tmp_path, database_url):
    runs, server, jobs = _runs(tmp_path, database_url, {"t1": {"acc": [(0, 0.6), (1, 0.9), (2, 0.8)]}, "t2": {"acc": [(0, 0.7)]},
                                          "t3": {}})
    assert runs.best(jobs.values(), "acc", "Maximize") == {"t1": 0.9, "t2": 0.7, "t3": None}
    assert runs.best(jobs.values(), "acc", "minimize") == {"t1": 0.6, "t2": 0.7, "t3": None}
    server.down = True
    assert "did not answer" in runs.run_data(jobs["t1"]).unavailable
    assert runs.best(jobs.values(), "acc", "Maximize") == {"t1": None, "t2": None, "t3": None}
