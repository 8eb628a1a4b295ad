"""Sweep jobs with the real SDK: six trials, two at a time, random sampling with a seed, each trial an ordinary
command job logging its metric with MLflow; the best trial where the SDK reads it, the trials listed as children,
a Bandit policy cancelling the poor ones, `jobs.stream` and `jobs.download` of the sweep; and the sample sweep
YAML loads as the CLI would read it."""

import io
import json
from contextlib import redirect_stdout
from pathlib import Path

import pytest
from azure.ai.ml import command, load_job
from azure.ai.ml.entities import AmlCompute
from azure.ai.ml.sweep import BanditPolicy, RandomSamplingAlgorithm, SweepJob, Uniform

from tests.waiting import wait_until

pytestmark = pytest.mark.e2e
ROOT = Path(__file__).resolve().parents[2]
TRIAL = Path(__file__).with_name("sweep_trial")
CLUSTER = "sweep-cluster"
# seed 4 draws C = 9.67, 5.52, 9.73, 7.18, 7.01, 2.24 (tests/unit/domain/test_sweep_rules.py shows it is seeded):
# accuracy = C / 10, so with a 20 % slack every trial below 0.81 is stopped once it has logged twice.
SEED, DRAWN_BEST = 4, "_2"


@pytest.fixture(scope="module")
def cluster(ml_client) -> str:
    ml_client.compute.begin_create_or_update(
        AmlCompute(name=CLUSTER, size="Standard_DS3_v2", min_instances=0, max_instances=2,
                   idle_time_before_scale_down=5)).result()
    yield CLUSTER
    ml_client.compute.begin_delete(CLUSTER).result()


def _sweep(cluster: str) -> SweepJob:
    trial = command(code=str(TRIAL), command="python trial.py ${{inputs.C}} 8", inputs={"C": 1.0},
                    environment="azureml:AzureML-sklearn-1.5@latest", compute=cluster)
    sweep = trial(C=Uniform(0.1, 10)).sweep(primary_metric="accuracy", goal="Maximize",
                                            sampling_algorithm=RandomSamplingAlgorithm(seed=SEED), compute=cluster)
    sweep.set_limits(max_total_trials=6, max_concurrent_trials=2, timeout=900)
    sweep.early_termination = BanditPolicy(slack_factor=0.2, evaluation_interval=1, delay_evaluation=1)
    sweep.experiment_name = "amlemu-sweep"
    return sweep


def test_a_seeded_random_sweep_runs_its_trials_and_reports_the_best(ml_client, cluster, job_dir, tmp_path):
    sweep = ml_client.jobs.create_or_update(_sweep(cluster))
    assert isinstance(sweep, SweepJob) and sweep.limits.max_total_trials == 6
    seen_running = wait_until(lambda: [c.status for c in ml_client.jobs.list(parent_job_name=sweep.name)],
                              timeout=300, interval=1, message="the first trials")
    assert 1 <= len(seen_running) <= 2
    out = io.StringIO()
    with redirect_stdout(out):
        ml_client.jobs.stream(sweep.name)  # returns once the sweep has ended
    done = ml_client.jobs.get(sweep.name)
    trials = list(ml_client.jobs.list(parent_job_name=sweep.name))
    statuses = {t.name: t.status for t in trials}
    assert done.status == "Completed", (statuses, done.properties)
    assert [t.name for t in trials] == [f"{sweep.name}_{i}" for i in range(6)]
    assert done.properties["best_child_run_id"] == sweep.name + DRAWN_BEST
    assert float(done.properties["score"]) == pytest.approx(0.973, abs=0.001)
    assert statuses[sweep.name + DRAWN_BEST] == "Completed" and statuses[f"{sweep.name}_5"] == "Canceled"
    assert "early termination (Bandit policy)" in out.getvalue() and "Scheduling job" in out.getvalue()
    best = ml_client.jobs.get(done.properties["best_child_run_id"])
    assert json.loads(best.properties["hyperparameters"])["C"] == pytest.approx(9.73, abs=0.01)  # its sampled value
    assert sweep.name not in [t.name for t in ml_client.jobs.list(parent_job_name=sweep.name)]
    assert all(j.name not in statuses for j in ml_client.jobs.list())  # trials are not top-level jobs
    ml_client.jobs.download(sweep.name, download_path=str(tmp_path), all=True)
    assert (tmp_path / "artifacts" / "user_logs" / "std_log.txt").is_file()  # the best trial's
    assert (tmp_path / "hd-artifacts" / "azureml-logs" / "hyperdrive.txt").is_file()  # the sweep's own


def test_cancelling_a_sweep_cancels_its_trials(ml_client, cluster):
    sweep = ml_client.jobs.create_or_update(_sweep(cluster))
    wait_until(lambda: any(c.status == "Running" for c in ml_client.jobs.list(parent_job_name=sweep.name)),
               timeout=300, interval=1, message="a running trial")
    ml_client.jobs.begin_cancel(sweep.name).result()
    assert ml_client.jobs.get(sweep.name).status == "Canceled"
    assert {c.status for c in ml_client.jobs.list(parent_job_name=sweep.name)} == {"Canceled"}


def test_the_sample_sweep_loads_as_the_cli_reads_it():
    sweep = load_job(ROOT / "sample_jobs" / "mlflow-train" / "sweep.yml")
    assert isinstance(sweep, SweepJob) and set(sweep.search_space) == {"C"}
    assert sweep.objective.primary_metric == "accuracy" and sweep.sampling_algorithm.type == "random"
