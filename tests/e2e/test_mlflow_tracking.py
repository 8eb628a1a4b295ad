"""MLflow tracking, as Azure ML users do it: a job logs with MLflow and nothing set by hand (the job is its run);
the user's machine reads the same run through the workspace's tracking URI with azureml-mlflow installed."""

import contextlib
import uuid
from pathlib import Path

import pytest
from azure.ai.ml import command, load_job

from tests.waiting import wait_until

pytestmark = pytest.mark.e2e
SAMPLE = Path(__file__).resolve().parents[2] / "sample_jobs" / "mlflow-train" / "job.yml"
# autolog, with the variables Azure sets: MLflow itself checks that MLFLOW_EXPERIMENT_ID is the named experiment's
AUTOLOG = """python -c '
import os, mlflow
from sklearn.datasets import load_iris
from sklearn.linear_model import LogisticRegression
mlflow.autolog()
LogisticRegression(max_iter=200).fit(*load_iris(return_X_y=True))
print("experiment", os.environ["MLFLOW_EXPERIMENT_ID"], mlflow.get_experiment_by_name(os.environ["MLFLOW_EXPERIMENT_NAME"]).experiment_id)
'"""


def _ended(ml_client, name: str, timeout: float = 900) -> str:
    return wait_until(lambda: (s := ml_client.jobs.get(name).status) in ("Completed", "Failed", "Canceled") and s,
                      timeout=timeout, interval=1, message=f"job {name} to end")


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
    assert [m.name for m in MlflowClient().search_registered_models("name LIKE 'amlemu-%'")] == ["amlemu-iris"]
    versions = MlflowClient().search_model_versions("name = 'amlemu-iris'")
    assert versions[0].version == model.version and versions[0].run_id == job.name


def test_autolog_jobs_that_never_log_and_metrics_after_a_restart(stack, ml_client, job_dir):
    experiment = f"autolog-{uuid.uuid4().hex[:6]}"
    logged = ml_client.jobs.create_or_update(command(command=AUTOLOG, environment="azureml:AzureML-sklearn-1.5@latest",
                                                     experiment_name=experiment))
    silent = ml_client.jobs.create_or_update(command(command="echo quiet", environment="azureml:AzureML-sklearn-1.5@latest",
                                                     experiment_name=experiment))
    for job in (logged, silent):
        assert _ended(ml_client, job.name) == "Completed", (job_dir(job.name) / "user_logs" / "std_log.txt").read_text()
    log = (job_dir(logged.name) / "user_logs" / "std_log.txt").read_text()

    import mlflow
    from mlflow.tracking import MlflowClient

    mlflow.set_tracking_uri(ml_client.workspaces.get(ml_client.workspace_name).mlflow_tracking_uri)
    found = mlflow.get_experiment_by_name(experiment)
    assert str(uuid.UUID(found.experiment_id)) == found.experiment_id  # a GUID, as Azure's are
    assert f"experiment {found.experiment_id} {found.experiment_id}" in log  # the job's MLFLOW_EXPERIMENT_ID
    runs = {r.info.run_id: r for r in mlflow.search_runs(experiment_ids=[found.experiment_id], output_format="list")}
    assert runs.keys() == {logged.name, silent.name}  # a job that logged nothing is a run too, as in Azure
    assert runs[silent.name].info.status == "FINISHED" and runs[silent.name].info.experiment_id == found.experiment_id
    autologged = runs[logged.name].data
    assert autologged.params["max_iter"] == "200" and "training_accuracy_score" in autologged.metrics
    assert "estimator_name" in autologged.tags

    # Without its MLflow server the api is alive but not ready (what `amlemu up` and the pytest plugin wait for)
    stack.compose("stop", "mlflow", capture=True)
    assert stack.healthy() and not stack.ready()
    with stack.client() as client:
        answer = client.get("/_emulator/ready")
    assert answer.status_code == 503 and answer.json()["error"]["code"] == "ServiceUnavailable", answer.text
    assert "MLflow tracking server" in answer.json()["error"]["message"]
    stack.compose("start", "mlflow", capture=True)
    stack.compose("restart", "api", capture=True)
    assert stack.wait_healthy(timeout=120)
    again = wait_until(lambda: _metrics(MlflowClient(), logged.name), timeout=120, interval=1,
                       message="the tracking server to answer after its restart")
    assert again == autologged.metrics  # kept in the MLflow server's database, in the stack's data folder


def test_the_tracking_server_runs_no_job_runners(stack):
    """MLflow's own server-side jobs are not Azure ML's (the api forwards none of their routes): its server starts
    none of their Huey consumers, each a Python process of its own."""
    import docker

    with contextlib.closing(docker.from_env()) as engine:
        server = engine.containers.get(f"{stack.project}-mlflow-1")
        commands = [" ".join(row[-1:]) for row in server.top()["Processes"]]
    assert commands and not [c for c in commands if "huey" in c], commands


def _metrics(client, run_id: str) -> dict | None:
    try:
        return client.get_run(run_id).data.metrics
    except Exception:  # noqa: BLE001 - the server is still starting: asked again
        return None
