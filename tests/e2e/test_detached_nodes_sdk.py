"""Nodes that do not share the emulator's data folder (issue 23's first step toward nodes on other machines): a
cluster tagged `amlemu.detached_nodes` gets nodes with a data volume of their own and no view of the stack's
folder. A job through the unmodified SDK reads its code and inputs (mounted and downloaded), its log reaches
`jobs.stream` while it runs, its node is killed mid-job, it requeues and completes on a fresh node, and its
outputs are in the workspace (a link it planted among them is not); once the cluster goes, no volume is left.
The checkpointing sample, preempted on a detached low-priority node, resumes from its checkpoint."""

import contextlib
import io
import json
import os
import threading
import uuid

import pytest
from azure.ai.ml import Input, Output, command
from azure.ai.ml.entities import AmlCompute, Data, Environment

from emulator.runtime.docker import DockerRuntime
from tests.samples import checkpointing_job, checkpointing_result
from tests.waiting import wait_until

pytestmark = pytest.mark.e2e
STEPS, STEP_SECONDS = 40, 0.5  # 20 s of steps, a checkpoint every 5 (2.5 s)
SCRIPT = """set -e
echo "detached says: $(cat "$1/greeting.txt")"
echo "node token: ${AMLEMU_NODE_TOKEN:-none}"
cp "$2/greeting.txt" "$3/copied.txt"
echo "attempt $AMLEMU_JOB_ATTEMPT" > "outputs/attempt-$AMLEMU_JOB_ATTEMPT.txt"
ln -sf /etc/passwd outputs/escape
if [ "$AMLEMU_JOB_ATTEMPT" = 1 ]; then echo stale > outputs/stale.txt; echo "waiting to be killed"; sleep 600; fi
rm outputs/stale.txt
echo finished
"""


def _status(ml_client, name: str) -> str:
    return ml_client.jobs.get(name).status


def _node_volumes(runtime: DockerRuntime) -> list[str]:
    label = os.environ["AMLEMU_STACK"]
    return [v for v in runtime.volumes({"amlemu.stack": label}) if v.startswith(f"amlemu-{label}-nodedata-")]


def test_a_job_on_detached_nodes_gets_its_files_streams_its_log_and_survives_a_killed_node(
        stack, ml_client, job_dir, nodes_of, tmp_path):
    runtime = DockerRuntime()
    cluster = f"e2e-detached-{uuid.uuid4().hex[:4]}"
    ml_client.compute.begin_create_or_update(AmlCompute(
        name=cluster, size="Standard_D2_v3", min_instances=0, max_instances=1, idle_time_before_scale_down=5,
        tags={"amlemu.detached_nodes": "true"})).result()
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "greeting.txt").write_text("hello from the workspace")
    data = ml_client.data.create_or_update(Data(name=f"greet-{uuid.uuid4().hex[:6]}", type="uri_folder",
                                                path=str(tmp_path / "data")))
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "job.sh").write_text(SCRIPT)
    name = ml_client.jobs.create_or_update(command(
        code=str(tmp_path / "src"), command="sh job.sh ${{inputs.data}} ${{inputs.copy}} ${{outputs.named}}",
        inputs={"data": Input(type="uri_folder", path=f"azureml:{data.name}:{data.version}"),
                "copy": Input(type="uri_folder", path=f"azureml:{data.name}:{data.version}", mode="download")},
        outputs={"named": Output(type="uri_folder")},
        environment=Environment(image="python:3.11-slim"), compute=cluster)).name

    # While attempt 1 runs, its log is in the workspace already: sent by the node as it is written.
    log = job_dir(name) / "user_logs" / "std_log.txt"
    wait_until(lambda: log.exists() and "waiting to be killed" in log.read_text(), timeout=240, interval=0.3,
               message="attempt 1's log in the workspace while it runs")
    assert _status(ml_client, name) == "Running"
    # and what it wrote so far, as on a node that shares the workspace's storage
    outputs = job_dir(name) / "outputs"
    wait_until(lambda: (outputs / "attempt-1.txt").exists() and (outputs / "stale.txt").exists(), timeout=30,
               interval=0.2,
               message="attempt 1's output in the workspace while it runs")
    (node,) = nodes_of(cluster)
    mounts = runtime.client.api.inspect_container(node.id)["Mounts"]
    assert not any(str(stack.home) in m.get("Source", "") for m in mounts), mounts  # no view of the stack's folder
    assert any(m["Type"] == "volume" and m["Destination"] == "/var/lib/amlemu" for m in mounts), mounts

    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        streaming = threading.Thread(target=ml_client.jobs.stream, args=(name,))
        streaming.start()
        runtime.signal(node.id, "SIGKILL")  # the node dies mid-job: the job goes back to the queue
        wait_until(lambda: _status(ml_client, name) in ("Completed", "Failed", "Canceled"), timeout=300,
                   interval=0.5, message="the job to end on a fresh node")
        streaming.join(timeout=120)
    assert _status(ml_client, name) == "Completed", ml_client.jobs.get(name)
    out = printed.getvalue()
    assert "detached says: hello from the workspace" in out and "finished" in out, out[-3000:]
    assert "node token: none" in out, out[-3000:]  # the node's token never reaches its jobs
    text = log.read_text()
    assert text.count("finished") == 1 and text.count("detached says: hello from the workspace") == 2, text

    # What both attempts wrote is in the workspace (the killed node's so far kept); the link they planted is not.
    assert (outputs / "attempt-1.txt").read_text() == "attempt 1\n"
    assert (outputs / "attempt-2.txt").read_text() == "attempt 2\n"
    assert not os.path.lexists(outputs / "escape")
    assert not (outputs / "stale.txt").exists()  # attempt 2 removed what attempt 1 left: so is the workspace's
    ml_client.jobs.download(name, download_path=str(tmp_path / "dl"), output_name="named")
    assert (tmp_path / "dl" / "named-outputs" / "named" / "copied.txt").read_text() == "hello from the workspace"

    ml_client.compute.begin_delete(cluster).result()
    wait_until(lambda: not _node_volumes(runtime), timeout=60, interval=0.5,
               message="the detached nodes' data volumes to go with them")
    assert not runtime.list({"amlemu.stack": os.environ["AMLEMU_STACK"], "amlemu.role": "job", "amlemu.job-name": name})


def test_the_checkpointing_sample_preempted_on_a_detached_node_resumes_from_its_checkpoint(
        ml_client, rest, workspace_path, job_outputs):
    cluster = f"e2e-dspot-{uuid.uuid4().hex[:4]}"
    ml_client.compute.begin_create_or_update(AmlCompute(
        name=cluster, size="Standard_DS3_v2", tier="low_priority", min_instances=0, max_instances=1,
        idle_time_before_scale_down=5, tags={"amlemu.detached_nodes": "true"})).result()
    job = checkpointing_job(cluster, STEPS, STEP_SECONDS, "e2e-detached-preemption")
    name = ml_client.jobs.create_or_update(job).name
    # its checkpoint reaches the workspace while it runs on a node that does not share it
    wait_until(lambda: (job_outputs(name) / "checkpoint.json").exists(), timeout=180, interval=0.3,
               message="the job's first checkpoint in the workspace")
    response = rest.post(f"/_emulator{workspace_path}/computes/{cluster}/preempt", json={})
    assert response.status_code == 202, response.text
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        ml_client.jobs.stream(name)
    assert _status(ml_client, name) == "Completed"
    out = printed.getvalue()
    assert "amlemu: attempt 2. " in out and "resuming from step" in out, out[-3000:]
    assert json.loads((job_outputs(name) / "result.json").read_text()) == checkpointing_result(STEPS)
    ml_client.compute.begin_delete(cluster).result()
