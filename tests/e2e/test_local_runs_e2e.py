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

from tests import gate, mlflow_rest
from tests.waiting import wait_until

pytestmark = pytest.mark.e2e
ENV = Environment(image="python:3.11-slim")
MAIN = """import os
print("hello from local compute")
os.makedirs("outputs", exist_ok=True)
with open("outputs/result.txt", "w") as out:
    out.write("42")
""" + mlflow_rest.log_metric("answer", 42)


def test_a_local_job_runs_on_the_emulators_machine_and_is_recorded(ml_client, job_dir, job_outputs, tmp_path):
    import mlflow

    mlflow_rest.track(ml_client)
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
