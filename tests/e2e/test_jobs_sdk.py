"""Command jobs through the unmodified azure-ai-ml SDK against the composed stack.

The samples run as a user runs them: `python submit.py` in a new process with the `amlemu env` variables
(the client shim on PYTHONPATH only takes effect in a new interpreter). The rest drive the SDK in-process.
"""

import contextlib
import io
import os
import subprocess
import sys
import threading
import uuid
from pathlib import Path

import pytest
from azure.ai.ml import command
from azure.ai.ml.entities import AmlCompute, Environment
from azure.ai.ml.exceptions import JobException

from tests import gate
from tests.waiting import wait_until

pytestmark = pytest.mark.e2e
ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "sample_jobs"
CLUSTER = "jobs-e2e"
ENV = Environment(image="python:3.11-slim")


@pytest.fixture(scope="module")
def cluster(ml_client) -> str:
    ml_client.compute.begin_create_or_update(
        AmlCompute(name=CLUSTER, size="Standard_DS3_v2", min_instances=0, max_instances=2,
                   idle_time_before_scale_down=5)).result()
    return CLUSTER


def _status(ml_client, name: str) -> str:
    return ml_client.jobs.get(name).status


def _wait_status(ml_client, name: str, *statuses: str, timeout: float = 180.0) -> str:
    return wait_until(lambda: (s := _status(ml_client, name)) in statuses and s, timeout=timeout, interval=0.5,
                      message=f"job {name} to reach {statuses}")


def _run_sample(folder: str, download: Path) -> str:
    result = subprocess.run([sys.executable, "submit.py", str(download)], cwd=SAMPLES / folder, env=os.environ,
                            capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return result.stdout


def _logs(job_dir: Path) -> str:
    """The job's user logs as downloaded: the SDK's stream prints a log only while the job runs, and on a busy
    machine the job may be over before its first look (seen in a full run), as on Azure."""
    return "".join(log.read_text() for log in sorted((job_dir / "artifacts" / "user_logs").glob("std_log*.txt")))


def test_the_scikit_learn_sample_trains_and_its_outputs_come_back(stack, tmp_path):
    out = _run_sample("sklearn-train", tmp_path)
    assert "COMPLETED" in out.upper(), out[-2000:]
    (job_dir,) = tmp_path.iterdir()
    assert (job_dir / "named-outputs" / "model" / "model.pkl").stat().st_size > 0
    assert "accuracy" in (job_dir / "artifacts" / "outputs" / "metrics.json").read_text()
    assert "test accuracy" in _logs(job_dir), out[-2000:]


def test_the_multi_node_sample_all_reduces_across_three_nodes(stack, tmp_path):
    out = _run_sample("multi-node", tmp_path)
    (job_dir,) = tmp_path.iterdir()
    assert "all-reduced" in _logs(job_dir) and "correct" in _logs(job_dir), out[-2000:]
    assert '"world_size": 3' in (job_dir / "artifacts" / "outputs" / "result.json").read_text()
    assert '"correct": true' in (job_dir / "artifacts" / "outputs" / "result.json").read_text()


def test_a_command_job_streams_lists_and_reports_its_nodes(ml_client, cluster, tmp_path, job_outputs):
    src = tmp_path / "src"
    src.mkdir()
    (src / "main.py").write_text("import os, sys\nprint('greeting', sys.argv[1], os.environ['WHO'])\n")
    job = ml_client.jobs.create_or_update(command(
        code=str(src), command=f"python main.py ${{{{inputs.word}}}} && {gate.WAIT} && echo done",
        inputs={"word": "hello"},
        environment=ENV, environment_variables={"WHO": "amlemu"}, compute=cluster,
        display_name="stream-me", experiment_name="e2e"))
    assert job.status in ("NotStarted", "Starting", "Preparing", "Queued")
    # list_nodes names the job on the node running it (SDK 1.35 keeps the wire's camelCase names).
    wait_until(lambda: any(n.__dict__.get("runId") == job.name and n.__dict__.get("nodeState") == "running"
                           for n in ml_client.compute.list_nodes(cluster)), timeout=180, interval=0.3,
               message="list_nodes to show the job running")
    # Stream while it runs: the first line shows live, then the job is let go and streaming ends with it.
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        streaming = threading.Thread(target=ml_client.jobs.stream, args=(job.name,))
        streaming.start()
        wait_until(lambda: "greeting hello amlemu" in printed.getvalue(), timeout=120, interval=0.2,
                   message="the live log line")
        gate.release(job_outputs(job.name))
        streaming.join(timeout=180)
    assert not streaming.is_alive()
    assert "greeting hello amlemu" in printed.getvalue() and "done" in printed.getvalue(), printed.getvalue()
    assert _status(ml_client, job.name) == "Completed"
    assert job.name in [j.name for j in ml_client.jobs.list()]


def test_a_failing_job_ends_failed_with_its_exit_code(ml_client, cluster):
    job = ml_client.jobs.create_or_update(command(command="echo about to fail; exit 3", environment=ENV,
                                                  compute=cluster))
    with pytest.raises(JobException) as raised:
        ml_client.jobs.stream(job.name)
    assert "exited with status code 3" in str(raised.value) and "about to fail" in str(raised.value)
    assert _status(ml_client, job.name) == "Failed"


def test_cancel_works_queued_and_running(ml_client, cluster):
    long = command(command=f"echo started; {gate.WAIT}", environment=ENV, compute=cluster)  # never released
    running = ml_client.jobs.create_or_update(long)
    _wait_status(ml_client, running.name, "Running")
    ml_client.jobs.begin_cancel(running.name).result()
    assert _status(ml_client, running.name) == "Canceled"
    fresh = ml_client.jobs.create_or_update(long)
    ml_client.jobs.begin_cancel(fresh.name).result()
    assert _status(ml_client, fresh.name) == "Canceled"


def test_bad_jobs_are_refused_with_the_field_named(ml_client, cluster, rest, workspace_path):
    from azure.core.exceptions import HttpResponseError

    name = f"bad-{uuid.uuid4().hex[:8]}"
    with pytest.raises(HttpResponseError, match="nope-cluster"):
        ml_client.jobs.create_or_update(command(name=name, command="echo hi", environment=ENV,
                                                compute="nope-cluster"))
    # The SDK itself refuses unknown inputs in a command; the service does too, for any other client.
    response = rest.put(f"{workspace_path}/jobs/{name}", params={"api-version": "2024-10-01"}, json={"properties": {
        "jobType": "Command", "command": "echo ${{inputs.missing}}", "computeId": cluster,
        "environmentId": f"{workspace_path}/environments/none/versions/1"}})
    assert response.status_code == 400 and response.json()["error"]["target"] == "properties.command", response.text
    with pytest.raises(HttpResponseError, match="condaFile"):
        ml_client.jobs.create_or_update(command(
            name=name, command="echo hi", compute=cluster,
            environment=Environment(image="python:3.11-slim", conda_file={"dependencies": "not-a-list"})))
    assert name not in [j.name for j in ml_client.jobs.list()]


def test_uri_folder_inputs_and_outputs(stack, cluster, tmp_path):
    """Local folder input upload and named output download need the client shim: a fresh interpreter."""
    data = tmp_path / "data"
    data.mkdir()
    (data / "a.txt").write_text("alpha")
    (data / "b.txt").write_text("beta")
    script = tmp_path / "run.py"
    script.write_text(f"""
import os, sys
from azure.ai.ml import MLClient, Input, Output, command
from azure.ai.ml.entities import Environment
from azure.identity import DefaultAzureCredential
ml = MLClient(DefaultAzureCredential(), os.environ["AMLEMU_SUBSCRIPTION_ID"], os.environ["AMLEMU_RESOURCE_GROUP"],
              os.environ["AMLEMU_WORKSPACE"])
job = ml.jobs.create_or_update(command(
    command="cat ${{{{inputs.data}}}}/*.txt > ${{{{outputs.joined}}}}/joined.txt && ls ${{{{inputs.data}}}}",
    inputs={{"data": Input(type="uri_folder", path={str(data)!r})}}, outputs={{"joined": Output(type="uri_folder")}},
    environment=Environment(image="python:3.11-slim"), compute={cluster!r}))
ml.jobs.stream(job.name)
ml.jobs.download(job.name, download_path={str(tmp_path / "dl")!r}, output_name="joined")
""")
    result = subprocess.run([sys.executable, str(script)], env=os.environ, capture_output=True, text=True,
                            timeout=600)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert (tmp_path / "dl" / "named-outputs" / "joined" / "joined.txt").read_text() == "alphabeta"

