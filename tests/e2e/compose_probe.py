"""Drives a stack started with plain `docker compose up` through the SDK; prints what the SDK saw as JSON.

Usage: python compose_probe.py works|stored|broken WORKDIR  (connection from the `amlemu env` variables)
- works: a job on a cluster, a compute instance, an online deployment that answers;
- stored: the job alone (the stack with its state in PostgreSQL);
- broken (a stack whose containers cannot mount their folders): what each of those says about it.
"""

import json
import os
import sys
from pathlib import Path

from azure.ai.ml import MLClient, command
from azure.ai.ml.entities import (
    AmlCompute,
    CodeConfiguration,
    ComputeInstance,
    Environment,
    ManagedOnlineDeployment,
    ManagedOnlineEndpoint,
    Model,
    ProbeSettings,
)
from azure.core.exceptions import HttpResponseError
from azure.identity import DefaultAzureCredential

from tests.waiting import wait_until  # stdlib only: importable from any venv with the repo on the path

ENV = Environment(image="python:3.11-slim")
SCORE = "import json\n\ndef init():\n    pass\n\ndef run(raw_data):\n    return {'echo': json.loads(raw_data)}\n"


def _client() -> MLClient:
    return MLClient(DefaultAzureCredential(), os.environ["AMLEMU_SUBSCRIPTION_ID"],
                    os.environ["AMLEMU_RESOURCE_GROUP"], os.environ["AMLEMU_WORKSPACE"])


def _deployment(ml: MLClient, workdir: Path) -> ManagedOnlineDeployment:
    (workdir / "model").mkdir(parents=True)
    (workdir / "model" / "w.txt").write_text("1")
    (workdir / "src").mkdir()
    (workdir / "src" / "score.py").write_text(SCORE)
    model = ml.models.create_or_update(Model(name="compose-model", path=str(workdir / "model")))
    ml.online_endpoints.begin_create_or_update(ManagedOnlineEndpoint(name="compose-ep", auth_mode="key")).result()
    probe = ProbeSettings(initial_delay=1, period=1)
    return ManagedOnlineDeployment(
        name="blue", endpoint_name="compose-ep", model=model, instance_type="Standard_DS2_v2", instance_count=1,
        code_configuration=CodeConfiguration(code=str(workdir / "src"), scoring_script="score.py"),
        environment=ENV, readiness_probe=probe, liveness_probe=probe)


def _job(ml: MLClient, workdir: Path) -> list:
    """A command job on a new cluster: its status and whether its log says what it echoed."""
    ml.compute.begin_create_or_update(AmlCompute(name="cpu", size="Standard_DS2_v2", max_instances=1,
                                                 idle_time_before_scale_down=300)).result()  # still up at the end
    job = ml.jobs.create_or_update(command(command="echo hello from compose", environment=ENV, compute="cpu"))
    ml.jobs.stream(job.name)
    ml.jobs.download(job.name, download_path=str(workdir / "job"), all=True)
    log = next((workdir / "job").rglob("std_log.txt")).read_text()
    return [ml.jobs.get(job.name).status, "hello from compose" in log]


def _served(ml: MLClient, workdir: Path) -> dict:
    """An online deployment made and invoked through the scoring router."""
    deployment = ml.online_deployments.begin_create_or_update(_deployment(ml, workdir)).result()
    (workdir / "request.json").write_text(json.dumps({"x": 1}))
    invoked = json.loads(ml.online_endpoints.invoke("compose-ep", deployment_name="blue",
                                                    request_file=str(workdir / "request.json")))
    return {"deployment": deployment.provisioning_state, "invoke": invoked}


def works(ml: MLClient, workdir: Path) -> dict:
    job = _job(ml, workdir)
    instance = ml.compute.begin_create_or_update(ComputeInstance(name="ci-compose", size="Standard_DS2_v2")).result()
    return {"job": job, "instance": [instance.state, bool(instance.services)], **_served(ml, workdir)}


def stored(ml: MLClient, workdir: Path) -> dict:
    """The api and the controller reading and writing the store: a cluster made, a job run on it."""
    return {"job": _job(ml, workdir)}


def _refused(poller_start) -> str:
    try:
        poller_start().result()
    except HttpResponseError as exc:
        return str(exc)
    return "no error"


def broken(ml: MLClient, workdir: Path) -> dict:
    ml.compute.begin_create_or_update(AmlCompute(name="cpu", size="Standard_DS2_v2", min_instances=1,
                                                 max_instances=1)).result()
    rg, ws = os.environ["AMLEMU_RESOURCE_GROUP"], os.environ["AMLEMU_WORKSPACE"]

    def errors():  # the SDK's entity keeps only provisioning errors; its REST model reads these
        found = ml.compute._operation.get(rg, ws, "cpu").properties.properties.errors  # noqa: SLF001
        return [(e.error.code, e.error.message) for e in found] if found else None
    cluster_errors = wait_until(errors, timeout=60, message="the cluster's errors")
    states, tried = set(), set()

    def three_tries():  # each try is a new node: 1 s, 2 s, 4 s ... apart
        for node in ml.compute.list_nodes("cpu"):
            states.add(node.__dict__.get("node_state") or node.__dict__.get("nodeState"))
            tried.add(node.__dict__.get("node_id") or node.__dict__.get("nodeId"))
        return len(tried) >= 3
    wait_until(three_tries, timeout=60, message="three tries at the cluster's node")
    instance = _refused(lambda: ml.compute.begin_create_or_update(
        ComputeInstance(name="ci-broken", size="Standard_DS2_v2")))
    deployment = _refused(lambda: ml.online_deployments.begin_create_or_update(_deployment(ml, workdir)))
    return {"cluster": cluster_errors, "node_states": sorted(states), "instance": instance,
            "instance_state": ml.compute.get("ci-broken").state, "deployment": deployment,
            "deployment_state": ml.online_deployments.get("blue", "compose-ep").provisioning_state}


if __name__ == "__main__":
    mode, folder = sys.argv[1], Path(sys.argv[2])
    seen = {"works": works, "broken": broken, "stored": stored}[mode](_client(), folder)
    print("\n" + json.dumps(seen))  # on a line of its own, after the pollers' dots
