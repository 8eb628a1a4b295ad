"""Drives jobs on an attached VM through the SDK for test_attached_vm_jobs_sdk.py; prints what the SDK saw as JSON.

Usage: python attached_vm_probe.py STEP COMPUTE ... (connection from the `amlemu env` variables)
- run COMPUTE WORKDIR ADDRESS USER KEY_FILE: attach the host as a VirtualMachineCompute (SSH address, port, user,
  key file, as Azure asks), run a command job there (its log streamed, its named output downloaded, the MLflow metric
  it logged from the host read back), then submit a second one that waits on its first attempt (to be cut off) and return at once;
- observe JOB: the job's status;
- finish JOB WORKDIR: the job streamed to its end, its status and its output;
- detach COMPUTE: the compute detached (begin_delete with action Detach), and the computes listed after;
- pool CLUSTER WORKDIR USER KEY_FILE ADDRESS...: each host attached (as CLUSTER-vm1, CLUSTER-vm2, ...), an AmlCompute
  cluster of one node per host over them (the tag amlemu.hostPool), and a job submitted there that waits on its first
  attempt (to be cut off);
- unpool CLUSTER HOST...: the cluster deleted, then each host detached, and the computes listed after.
"""

import contextlib
import io
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path

from azure.ai.ml import Input, MLClient, Output, command
from azure.ai.ml.entities import AmlCompute, Data, Environment, VirtualMachineCompute, VirtualMachineSshSettings
from azure.identity import DefaultAzureCredential

from tests import mlflow_rest

ENV = Environment(image="python:3.11-slim")
# $1 the input folder, $2 the named output; the second job ($CUT_ME) waits in its first attempt to be cut off.
SCRIPT = """set -e
echo "on the host: $(cat "$1/greeting.txt")"
echo "attempt $AMLEMU_JOB_ATTEMPT"
tr a-z A-Z < "$1/greeting.txt" > "$2/shout.txt"
python log_metric.py
if [ "${CUT_ME:-}" = 1 ] && [ "$AMLEMU_JOB_ATTEMPT" = 1 ]; then echo "waiting to be cut off"; sleep 600; fi
echo finished
"""


def _client() -> MLClient:
    return MLClient(DefaultAzureCredential(), os.environ["AMLEMU_SUBSCRIPTION_ID"],
                    os.environ["AMLEMU_RESOURCE_GROUP"], os.environ["AMLEMU_WORKSPACE"])


def _streamed(ml: MLClient, job: str) -> str:
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        ml.jobs.stream(job)
    return printed.getvalue()


def _output(ml: MLClient, job: str, folder: Path) -> str | None:
    ml.jobs.download(job, download_path=str(folder), output_name="shout")
    written = folder / "named-outputs" / "shout" / "shout.txt"
    return written.read_text() if written.exists() else None


def _metrics(ml: MLClient, job: str) -> dict:
    import mlflow

    mlflow.set_tracking_uri(ml.workspaces.get(ml.workspace_name).mlflow_tracking_uri)
    return mlflow.get_run(job).data.metrics


def _attach(ml: MLClient, compute: str, address: str, user: str, key_file: str) -> VirtualMachineCompute:
    sub, group = os.environ["AMLEMU_SUBSCRIPTION_ID"], os.environ["AMLEMU_RESOURCE_GROUP"]
    return ml.compute.begin_attach(VirtualMachineCompute(
        name=compute, resource_id=f"/subscriptions/{sub}/resourceGroups/{group}/providers/Microsoft.Compute/"
                                  f"virtualMachines/{address}",
        ssh_settings=VirtualMachineSshSettings(admin_username=user, ssh_port=22, ssh_private_key_file=key_file)
    )).result()


def _job(ml: MLClient, compute: str, folder: Path) -> Callable[..., str]:
    """The job's input (a data asset) and code in `folder`: what submits it to `compute` with more variables."""
    (folder / "data").mkdir(parents=True)
    (folder / "data" / "greeting.txt").write_text("hello from the workspace")
    (folder / "src").mkdir()
    (folder / "src" / "job.sh").write_text(SCRIPT)
    (folder / "src" / "log_metric.py").write_text(mlflow_rest.log_metric("answer", 42))
    data = ml.data.create_or_update(Data(name=f"greeting-{compute}", type="uri_folder", path=str(folder / "data")))

    def submit(**env: str) -> str:
        return ml.jobs.create_or_update(command(
            code=str(folder / "src"), command="sh job.sh ${{inputs.greeting}} ${{outputs.shout}}",
            inputs={"greeting": Input(type="uri_folder", path=f"azureml:{data.name}:{data.version}")},
            outputs={"shout": Output(type="uri_folder")}, environment=ENV, compute=compute,
            environment_variables=env)).name
    return submit


def run(ml: MLClient, compute: str, workdir: str, address: str, user: str, key_file: str) -> dict:
    attached = _attach(ml, compute, address, user, key_file)
    folder = Path(workdir)
    submit = _job(ml, compute, folder)
    first = submit()
    log = _streamed(ml, first)
    seen = {"attached": [type(attached).__name__, attached.provisioning_state], "first": first,
            "first_status": ml.jobs.get(first).status, "first_log": log,
            "first_output": _output(ml, first, folder / "first"), "first_metrics": _metrics(ml, first)}
    seen["second"] = submit(CUT_ME="1")
    return seen


def observe(ml: MLClient, job: str) -> dict:
    return {"status": ml.jobs.get(job).status}


def finish(ml: MLClient, job: str, workdir: str) -> dict:
    log = _streamed(ml, job)
    return {"status": ml.jobs.get(job).status, "log": log, "output": _output(ml, job, Path(workdir) / job)}


def detach(ml: MLClient, compute: str) -> dict:
    ml.compute.begin_delete(compute, action="Detach").result()
    return {"computes": sorted(c.name for c in ml.compute.list())}


def pool(ml: MLClient, cluster: str, workdir: str, user: str, key_file: str, *addresses: str) -> dict:
    hosts = [f"{cluster}-vm{i}" for i, _ in enumerate(addresses, 1)]
    for host, address in zip(hosts, addresses, strict=True):
        _attach(ml, host, address, user, key_file)
    made = ml.compute.begin_create_or_update(AmlCompute(
        name=cluster, size="Standard_DS2_v2", min_instances=len(hosts), max_instances=len(hosts),
        tags={"amlemu.hostPool": ",".join(hosts)})).result()
    return {"hosts": hosts, "cluster": made.provisioning_state,
            "job": _job(ml, cluster, Path(workdir))(CUT_ME="1")}


def unpool(ml: MLClient, cluster: str, *hosts: str) -> dict:
    ml.compute.begin_delete(cluster).result()
    for host in hosts:
        ml.compute.begin_delete(host, action="Detach").result()
    return {"computes": sorted(c.name for c in ml.compute.list())}


if __name__ == "__main__":
    step, *args = sys.argv[1:]
    seen = {"run": run, "observe": observe, "finish": finish, "detach": detach, "pool": pool,
            "unpool": unpool}[step](_client(), *args)
    print("\n" + json.dumps(seen))  # on a line of its own, after the pollers' dots
