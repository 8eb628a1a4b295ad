"""Batch scoring of ../sklearn-train's model on a low-priority cluster, with the azure-ai-ml SDK: train and
register the model (or take one already registered), create the batch endpoint and deployment from endpoint.yml and
deployment.yml, invoke it with the local folder data/ (the SDK uploads it), stream the job, download predictions.csv
and print a summary.

With --preempt, once the scoring step runs, a node of the cluster is preempted through the emulator's control
(`amlemu preempt batch-spot`, as a user would in another terminal): the job still ends with every file scored
exactly once, which the summary checks (one line per input file, same names, none twice).

Against amlemu: `eval "$(amlemu env)"` first. Against Azure: set AMLEMU_SUBSCRIPTION_ID, _RESOURCE_GROUP and
_WORKSPACE to a real workspace and sign in (DefaultAzureCredential); --preempt needs the emulator.

    python score.py [--endpoint NAME] [--model NAME:VERSION] [--preempt] [--out DIR]
"""

import argparse
import os
import secrets
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from azure.ai.ml import Input, MLClient, load_batch_deployment, load_batch_endpoint, load_job
from azure.ai.ml.entities import AmlCompute, Model
from azure.identity import DefaultAzureCredential

HERE = Path(__file__).parent
CLUSTER = "batch-spot"
SPECIES = ("setosa", "versicolor", "virginica")
TERMINAL = {"Completed", "Failed", "Canceled", "NotResponding"}

parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
parser.add_argument("--endpoint", default=f"flowers-batch-{secrets.token_hex(2)}", help="endpoint names are unique")
parser.add_argument("--model", help="a registered model NAME:VERSION (default: train sklearn-train and register it)")
parser.add_argument("--preempt", action="store_true", help="preempt a node while the files are being scored")
parser.add_argument("--out", type=Path, default=Path(tempfile.mkdtemp(prefix="batch-scoring-")))
args = parser.parse_args()

ml_client = MLClient(DefaultAzureCredential(), os.environ["AMLEMU_SUBSCRIPTION_ID"],
                     os.environ["AMLEMU_RESOURCE_GROUP"], os.environ["AMLEMU_WORKSPACE"])

# 1. A low-priority cluster: its nodes can be taken at any time (Azure's spot capacity).
ml_client.compute.begin_create_or_update(AmlCompute(
    name=CLUSTER, size="Standard_DS3_v2", tier="low_priority", min_instances=0, max_instances=2,
    idle_time_before_scale_down=120)).result()

# 2. The model: the sklearn-train sample's job output `model` (a folder holding model.pkl), registered.
if args.model:
    name, version = args.model.split(":")
    model = ml_client.models.get(name, version=version)
else:
    training = load_job(HERE.parent / "sklearn-train" / "job.yml")
    training.compute = CLUSTER
    training = ml_client.jobs.create_or_update(training)
    print(f"training: job {training.name}")
    ml_client.jobs.stream(training.name)
    model = ml_client.models.create_or_update(Model(name="sklearn-flowers", type="custom_model",
                                                    path=f"azureml://jobs/{training.name}/outputs/model"))
print(f"model {model.name}:{model.version}")

# 3. The endpoint and its deployment, as `az ml batch-endpoint create` / `batch-deployment create` take them.
endpoint = load_batch_endpoint(HERE / "endpoint.yml")
endpoint.name = args.endpoint
ml_client.batch_endpoints.begin_create_or_update(endpoint).result()
deployment = load_batch_deployment(HERE / "deployment.yml")
deployment.endpoint_name, deployment.model = args.endpoint, model
if args.preempt:  # slow scoring down (45 s on 4 workers), so that the node goes (30 s after its notice) mid-run
    deployment.environment_variables = {**(deployment.environment_variables or {}), "SECONDS_PER_FILE": "6"}
deployment = ml_client.batch_deployments.begin_create_or_update(deployment).result()
endpoint = ml_client.batch_endpoints.get(args.endpoint)
endpoint.defaults.deployment_name = deployment.name
ml_client.batch_endpoints.begin_create_or_update(endpoint).result()
print(f"endpoint {args.endpoint}: {ml_client.batch_endpoints.get(args.endpoint).scoring_uri}")

# 4. Invoke with a local folder: the SDK uploads it, the job scores it on the cluster.
inputs = sorted(p.name for p in (HERE / "data").glob("*.csv"))
started = time.monotonic()
job = ml_client.batch_endpoints.invoke(endpoint_name=args.endpoint,
                                       input=Input(type="uri_folder", path=str(HERE / "data")))
print(f"batch job {job.name}: {len(inputs)} files")


def scoring_step():
    return next((j for j in ml_client.jobs.list(parent_job_name=job.name)), None)


def preempt_a_node() -> None:
    """Wait until the scoring step runs and has been at it a few seconds, then preempt one of its nodes."""
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline:
        step = scoring_step()
        if step is not None and step.status == "Running":
            break
        if ml_client.jobs.get(job.name).status in TERMINAL:
            sys.exit(f"{job.name} ended before any node could be preempted")
        time.sleep(1)  # noqa: TID251 (a user script polling the service)
    time.sleep(6)  # noqa: TID251 (into the mini-batches: init() done, some files scored, most not)
    amlemu = shutil.which("amlemu") or str(Path(sys.executable).parent / "amlemu")
    subprocess.run([amlemu, "preempt", CLUSTER], check=True)


def follow_step() -> None:
    """Print the scoring step's statuses as they change until the batch job ends (a preempted step is requeued)."""
    seen = []
    while ml_client.jobs.get(job.name).status not in TERMINAL:
        step = scoring_step()
        if step is not None and (not seen or seen[-1] != step.status):
            seen.append(step.status)
            print(f"step {step.display_name}: {step.status}", flush=True)
        time.sleep(1)  # noqa: TID251 (a user script polling the service)
    print("step statuses seen: " + " → ".join(seen))


if args.preempt:
    preempt_a_node()
    follow_step()
ml_client.jobs.stream(job.name)
status = ml_client.jobs.get(job.name).status
status = getattr(status, "value", status)  # the SDK gives a JobStatus enum or a str
print(f"{job.name}: {status} after {time.monotonic() - started:.0f} s")

# 5. predictions.csv: a row per file (file, flowers, setosa, versicolor, virginica).
ml_client.jobs.download(job.name, download_path=str(args.out))
lines = (args.out / "predictions.csv").read_text().splitlines()
names = Counter(line.split(",")[0] for line in lines)
totals = Counter()
for line in lines:
    _, flowers, *counts = line.split(",")
    totals.update({"flowers": int(flowers), **{s: int(c) for s, c in zip(SPECIES, counts, strict=True)}})
print(f"{args.out / 'predictions.csv'}: {len(lines)} lines for {len(inputs)} input files; "
      f"{totals['flowers']} flowers: " + ", ".join(f"{totals[s]} {s}" for s in SPECIES))
twice = sorted(n for n, c in names.items() if c > 1)
missing, unknown = sorted(set(inputs) - set(names)), sorted(set(names) - set(inputs))
print(f"scored twice: {twice or 'none'}; not scored: {missing or 'none'}; not an input: {unknown or 'none'}")
once = len(lines) == len(inputs) and not twice and not missing and not unknown
print("every file scored exactly once" if once else "NOT every file scored exactly once")
step = scoring_step()
if step is not None:
    print(f"step {step.name} ({step.display_name}): {step.status}")
sys.exit(0 if status == "Completed" and once else 1)
