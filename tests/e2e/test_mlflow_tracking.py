"""MLflow tracking, as Azure ML users do it: a job logs with MLflow and nothing set by hand (the job is its run);
the user's machine reads the same run through the workspace's tracking URI with azureml-mlflow installed."""

from pathlib import Path

import pytest
from azure.ai.ml import load_job

from tests.waiting import wait_until

pytestmark = pytest.mark.e2e
SAMPLE = Path(__file__).resolve().parents[2] / "sample_jobs" / "mlflow-train" / "job.yml"


def test_a_job_logs_to_mlflow_and_the_users_machine_reads_the_same_run(ml_client, job_dir, tmp_path):
    job = ml_client.jobs.create_or_update(load_job(SAMPLE))
    status = wait_until(lambda: (s := ml_client.jobs.get(job.name).status) in ("Completed", "Failed") and s,
                        timeout=900, interval=1, message=f"job {job.name} to end (a first build downloads wheels)")
    log = (job_dir(job.name) / "user_logs" / "std_log.txt").read_text()
    assert status == "Completed", log[-4000:]
    assert f"logged to MLflow run {job.name}" in log  # in the job, its name is its run id, as in Azure

    import mlflow
    from mlflow.tracking import MlflowClient

    uri = ml_client.workspaces.get(ml_client.workspace_name).mlflow_tracking_uri
    mlflow.set_tracking_uri(uri)
    run = mlflow.get_run(job.name)
    assert run.info.run_id == job.name and run.info.status == "FINISHED"
    assert run.data.params == {"C": "0.5", "epochs": "5"}
    assert 0.5 < run.data.metrics["accuracy"] <= 1.0
    history = MlflowClient().get_metric_history(job.name, "test_accuracy")
    assert [m.step for m in history] == [0, 1, 2, 3, 4]
    found = mlflow.search_runs(experiment_names=["amlemu-mlflow"], output_format="list")
    assert job.name in [r.info.run_id for r in found]
    files = {a.path for a in MlflowClient().list_artifacts(job.name)} | {
        a.path for a in MlflowClient().list_artifacts(job.name, "model")}
    assert {"classes.json", "model/MLmodel"} <= files
    local = mlflow.artifacts.download_artifacts(run_id=job.name, artifact_path="classes.json", dst_path=str(tmp_path))
    assert '"classes"' in Path(local).read_text()
    # Azure keeps a run's artifacts with the job's: jobs.download's folder holds the MLflow model too
    assert (job_dir(job.name) / "model" / "MLmodel").is_file()
    # the model the script registered through MLflow is the workspace's, its files the run's
    model = ml_client.models.get("amlemu-iris", label="latest")
    assert model.type == "mlflow_model" and model.job_name == job.name
    ml_client.models.download("amlemu-iris", model.version, download_path=str(tmp_path / "downloaded"))
    assert list((tmp_path / "downloaded").rglob("MLmodel"))
    assert MlflowClient().get_model_version("amlemu-iris", model.version).run_id == job.name
