"""The controller's parent-jobs step on a store of its own, its clock moved by the test, the trials' metrics given
by the test in place of MLflow: a sweep makes its trials (ordinary command jobs) as slots free up, never more than
asked and never twice across restarts, stops what its policy and limits say, shows its best trial, and rolls its
status up from its trials'; cancelling it cancels them."""

import pytest

from emulator.controller.reconcilers.parents import ParentReconciler
from emulator.domain.jobs import artifacts
from emulator.domain.jobs.status import JobStatus as S
from emulator.services import jobs, sweeps
from emulator.services.sweep_driver import SweepDriver
from emulator.services.sweeps import KIND

ENV = "py"


class Metrics:
    """MLflow, as the test says: the values each trial (by name) has logged."""

    def __init__(self):
        self.logged: dict[str, list[float]] = {}
        self.asked: list[tuple[str, ...]] = []

    def __call__(self, keys, metric):
        keys = tuple(keys)
        self.asked.append(keys)
        return {key: self.logged.get(key.rsplit("/", 1)[-1], []) for key in keys}


def sweep_body(azure, **props) -> dict:
    base = {"jobType": "Sweep", "searchSpace": {"C": ["uniform", [0.1, 10]]},
            "samplingAlgorithm": {"samplingAlgorithmType": "Random", "seed": 11},
            "objective": {"primaryMetric": "accuracy", "goal": "maximize"},
            "limits": {"maxTotalTrials": 4, "maxConcurrentTrials": 2},
            "computeId": azure.ref.child_id("computes", "cpu"),
            "trial": {"command": "python train.py --C ${{search_space.C}}",
                      "environmentId": azure.ref.child_id("environments", ENV) + "/versions/1"}}
    return {"properties": {**base, **props}}


@pytest.fixture
def ready(py_and_cpu) -> None:
    """An environment and a cluster (conftest)."""


@pytest.fixture
def metrics() -> Metrics:
    return Metrics()


def reconciler(azure, metrics) -> ParentReconciler:
    """A controller's parents step; a new one is a restarted controller."""
    return ParentReconciler(azure.settings, azure.store, azure.clock, metrics, {KIND: SweepDriver()})


def submit(azure, name: str, **props) -> None:
    with azure.store.transaction() as repo:
        sweeps.put(repo, azure.ref, name, sweep_body(azure, **props), azure.clock())


def state(azure, name: str) -> tuple[str, list[tuple[str, str]]]:
    with azure.store.transaction() as repo:
        parent = jobs.get(repo, azure.ref, name)
        return parent.status, [(c.name, c.status) for c in repo.children(parent.key)]


def end(azure, name: str, status: S = S.COMPLETED) -> None:
    """What the job machinery does with a trial (tests/unit/controller/test_job_pass.py covers it)."""
    steps = (S.STARTING, S.PREPARING, S.QUEUED, S.RUNNING, S.FINALIZING, S.COMPLETED)
    with azure.store.transaction() as repo:
        job = jobs.get(repo, azure.ref, name)
        for step in steps[steps.index(S(job.status)) + 1 if job.status in steps else 0:] if status == S.COMPLETED \
                else (status,):
            jobs.transition(job, step, azure.clock())


def run(azure, name: str) -> None:
    with azure.store.transaction() as repo:
        job = jobs.get(repo, azure.ref, name)
        for step in (S.STARTING, S.PREPARING, S.QUEUED, S.RUNNING):
            jobs.transition(job, step, azure.clock())


def test_trials_are_made_as_slots_free_never_twice_and_the_best_is_shown(azure, ready, metrics):
    submit(azure, "sw")
    reconciler(azure, metrics).tick()
    assert state(azure, "sw") == ("Running", [("sw_0", "NotStarted"), ("sw_1", "NotStarted")])
    reconciler(azure, metrics).tick()  # a restarted controller: nothing more while both run
    assert len(state(azure, "sw")[1]) == 2
    with azure.store.transaction() as repo:
        trial = jobs.get(repo, azure.ref, "sw_0")
        assert trial.body["command"] == "python train.py --C ${{inputs.C}}" and trial.driver is None
        assert trial.compute_key == azure.key("cpu") and jobs.listed(repo, azure.ref, "All") == [
            jobs.get(repo, azure.ref, "sw")]  # trials are not listed among the jobs
    metrics.logged.update(sw_0=[0.5, 0.7], sw_1=[0.9])
    end(azure, "sw_0")
    end(azure, "sw_1", S.FAILED)
    reconciler(azure, metrics).tick()
    assert [n for n, _ in state(azure, "sw")[1]] == ["sw_0", "sw_1", "sw_2", "sw_3"]  # 4 in all, 2 at once
    with azure.store.transaction() as repo:
        props = jobs.get(repo, azure.ref, "sw").body["properties"]
        assert (props["best_child_run_id"], props["score"]) == ("sw_0", "0.7")  # a failed trial is never best
    metrics.logged.update(sw_2=[0.95], sw_3=[])
    end(azure, "sw_2")
    end(azure, "sw_3")
    reconciler(azure, metrics).tick()
    status, trials = state(azure, "sw")
    assert status == "Completed" and len(trials) == 4
    with azure.store.transaction() as repo:
        assert jobs.get(repo, azure.ref, "sw").body["properties"]["best_child_run_id"] == "sw_2"
    log = azure.settings.data_dir / artifacts.directory(azure.ref, "sw") / "azureml-logs/hyperdrive.txt"
    assert "Scheduling job, id='sw_3'" in log.read_text() and "ended Failed" in log.read_text()


def test_seeded_sweeps_sample_the_same_values(azure, ready, metrics):
    submit(azure, "one")
    submit(azure, "two")
    reconciler(azure, metrics).tick()
    with azure.store.transaction() as repo:
        values = [[jobs.get(repo, azure.ref, f"{s}_{i}").body["inputs"]["C"]["value"] for i in (0, 1)]
                  for s in ("one", "two")]
    assert values[0] == values[1] and values[0][0] != values[0][1]


def test_a_pass_killed_before_its_commit_makes_no_trial_and_the_next_makes_each_once(azure, ready, metrics,
                                                                                    monkeypatch):
    submit(azure, "sw")
    submit_job, calls = jobs.put, []

    def dies_on_the_second(*args, **kwargs):
        calls.append(args[2])
        if len(calls) == 2:
            raise RuntimeError("SIGKILL")
        return submit_job(*args, **kwargs)

    monkeypatch.setattr(jobs, "put", dies_on_the_second)
    reconciler(azure, metrics).tick()  # the step fails: its parent's changes are undone
    assert state(azure, "sw") == ("NotStarted", [])
    monkeypatch.setattr(jobs, "put", submit_job)
    reconciler(azure, metrics).tick()
    assert state(azure, "sw")[1] == [("sw_0", "NotStarted"), ("sw_1", "NotStarted")]


def test_bandit_stops_a_poor_trial_and_trial_timeout_a_slow_one(azure, ready, metrics):
    submit(azure, "sw", earlyTermination={"policyType": "Bandit", "slackFactor": 0.1, "evaluationInterval": 1},
           limits={"maxTotalTrials": 2, "maxConcurrentTrials": 2, "trialTimeout": "PT60S"})
    controller = reconciler(azure, metrics)
    controller.tick()
    run(azure, "sw_0")
    run(azure, "sw_1")
    metrics.logged.update(sw_0=[0.9, 0.92], sw_1=[0.5, 0.6])  # at 2: 0.6 < 0.92 / 1.1
    controller.tick()
    assert state(azure, "sw")[1] == [("sw_0", "Running"), ("sw_1", "CancelRequested")]
    azure.clock.advance(61)
    controller.tick()
    assert state(azure, "sw")[1][0] == ("sw_0", "CancelRequested")
    end(azure, "sw_0", S.CANCELED)
    end(azure, "sw_1", S.CANCELED)
    controller.tick()
    assert state(azure, "sw")[0] == "Failed"  # no trial completed


def test_cancelling_a_sweep_cancels_its_trials_and_it_ends_once_none_runs(azure, ready, metrics):
    submit(azure, "sw")
    reconciler(azure, metrics).tick()
    run(azure, "sw_0")
    with azure.store.transaction() as repo:
        jobs.cancel(repo, azure.ref, "sw", azure.clock())
    assert state(azure, "sw") == ("CancelRequested", [("sw_0", "CancelRequested"), ("sw_1", "Canceled")])
    reconciler(azure, metrics).tick()
    assert state(azure, "sw")[0] == "CancelRequested"  # a trial still stops
    end(azure, "sw_0", S.CANCELED)
    reconciler(azure, metrics).tick()
    assert state(azure, "sw") == ("Canceled", [("sw_0", "Canceled"), ("sw_1", "Canceled")])


def test_the_sweep_timeout_cancels_what_runs_and_makes_no_more(azure, ready, metrics):
    submit(azure, "sw", limits={"maxTotalTrials": 4, "maxConcurrentTrials": 1, "timeout": "PT5M"})
    controller = reconciler(azure, metrics)
    controller.tick()
    run(azure, "sw_0")
    metrics.logged["sw_0"] = [0.4]
    azure.clock.advance(300)
    controller.tick()
    assert state(azure, "sw") == ("Running", [("sw_0", "CancelRequested")])
    end(azure, "sw_0", S.CANCELED)
    controller.tick()
    assert state(azure, "sw") == ("Failed", [("sw_0", "Canceled")])


def test_a_trial_that_cannot_be_made_fails_the_sweep(azure, ready, metrics):
    submit(azure, "sw")
    with azure.store.transaction() as repo:
        repo.remove(repo.asset_version(azure.ref.child_id("environments", ENV) + "/versions/1"))
    reconciler(azure, metrics).tick()
    with azure.store.transaction() as repo:
        parent = jobs.get(repo, azure.ref, "sw")
        assert parent.status == "Failed" and "sw_0" in parent.error["message"]
