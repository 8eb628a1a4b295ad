"""compute="local" through the unmodified azure-ai-ml SDK against the composed stack: the SDK starts the run through
the Execution Service (and runs the script it gets, which has nothing to do); the job runs in a container on the
emulator's machine, with its log, outputs and an MLflow metric recorded in the workspace, on no compute the user
sees."""

import contextlib
import io
import threading
from pathlib import Path

import pytest
from azure.ai.ml import command
from azure.ai.ml.entities import Environment

from tests import gate
from tests.waiting import wait_until

pytestmark = pytest.mark.e2e
ENV = Environment(image="python:3.11-slim")
# An MLflow metric by MLflow's REST API (the image has no mlflow): where and as whom, from what Azure ML sets in a job.
MAIN = '''import json, os, ssl, time, urllib.error, urllib.request
print("hello from local compute")
os.makedirs("outputs", exist_ok=True)
with open("outputs/result.txt", "w") as out:
    out.write("42")
uri = os.environ["MLFLOW_TRACKING_URI"].replace("azureml://", "https://", 1) + "/api/2.0/mlflow/runs/log-metric"
body = {"run_id": os.environ["MLFLOW_RUN_ID"], "key": "answer", "value": 42, "step": 0,
        "timestamp": int(time.time() * 1000)}
request = urllib.request.Request(uri, data=json.dumps(body).encode(), method="POST", headers={
    "Authorization": "Bearer " + os.environ["MLFLOW_TRACKING_TOKEN"], "Content-Type": "application/json"})
try:
    urllib.request.urlopen(request, context=ssl.create_default_context(cafile=os.environ["SSL_CERT_FILE"])).read()
except urllib.error.HTTPError as exc:
    raise SystemExit(f"MLflow answered {exc.code}: {exc.read()[:500]!r}")
print("logged answer")
'''


def _mlflow_answers() -> bool:
    """The stack's MLflow server is up (a fresh stack's may still be starting: the api answers 503 until then)."""
    import mlflow

    try:
        mlflow.search_experiments(max_results=1)
    except Exception as exc:  # noqa: BLE001 (whatever the client raises while the server starts)
        raise AssertionError(str(exc)) from exc
    return True


def test_a_local_job_runs_on_the_emulators_machine_and_is_recorded(ml_client, job_dir, job_outputs, tmp_path):
    import mlflow

    mlflow.set_tracking_uri(ml_client.workspaces.get(ml_client.workspace_name).mlflow_tracking_uri)
    wait_until(_mlflow_answers, timeout=120, interval=1, message="the workspace's MLflow to answer")
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "main.py").write_text(MAIN)
    # The job waits at the gate so that it is streamed while it runs (the SDK prints logs only then, as on Azure).
    run = f"python main.py && {gate.WAIT} && rm outputs/gate"
    job = ml_client.jobs.create_or_update(command(code=str(tmp_path / "src"), command=run, compute="local",
                                                  environment=ENV, experiment_name="local-e2e"))
    assert job.compute == "local" and "Local" in job.services
    streamed = io.StringIO()
    with contextlib.redirect_stdout(streamed):
        streaming = threading.Thread(target=ml_client.jobs.stream, args=(job.name,))
        streaming.start()
        wait_until(lambda: "logged answer" in streamed.getvalue(), timeout=600, interval=0.5,
                   message=f"local job {job.name}'s log to stream")
        gate.release(job_outputs(job.name))
        streaming.join(timeout=180)
    assert not streaming.is_alive(), "jobs.stream did not return"
    assert "hello from local compute" in streamed.getvalue() and "Execution Summary" in streamed.getvalue()
    status = ml_client.jobs.get(job.name).status
    log = (job_dir(job.name) / "user_logs" / "std_log.txt").read_text()
    assert status == "Completed", log[-4000:]
    assert "hello from local compute" in log and "logged answer" in log
    ml_client.jobs.download(job.name, download_path=str(tmp_path / "dl"), all=True)
    assert (tmp_path / "dl" / "artifacts" / "outputs" / "result.txt").read_text() == "42"
    assert mlflow.get_run(job.name).data.metrics["answer"] == 42
    got = ml_client.jobs.get(job.name)
    assert got.compute == "local" and got.experiment_name == "local-e2e"
    assert all(not c.name.startswith("local") for c in ml_client.compute.list())
    assert Path(job_dir(job.name)).is_dir()
