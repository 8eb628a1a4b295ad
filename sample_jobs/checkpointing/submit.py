"""Create a low-priority cluster, submit job.yml with the azure-ai-ml SDK, stream its log, and download its
outputs.

While it runs, `amlemu preempt spot-cluster` in another terminal preempts its node: the log shows the
preemption notice, a checkpoint and the acknowledgement, the job goes back to Queued, and the next attempt
resumes from the checkpoint on a fresh node. The result is the same as without the preemption.

Against amlemu: `eval "$(amlemu env)"` first. Against Azure: set AMLEMU_SUBSCRIPTION_ID, _RESOURCE_GROUP and
_WORKSPACE to a real workspace and sign in (DefaultAzureCredential); nothing else changes.
"""

import os
import sys
from pathlib import Path

from azure.ai.ml import MLClient, load_job
from azure.ai.ml.entities import AmlCompute
from azure.identity import DefaultAzureCredential

HERE = Path(__file__).parent
CLUSTER = "spot-cluster"  # the compute job.yml names

ml_client = MLClient(DefaultAzureCredential(), os.environ["AMLEMU_SUBSCRIPTION_ID"],
                     os.environ["AMLEMU_RESOURCE_GROUP"], os.environ["AMLEMU_WORKSPACE"])
ml_client.compute.begin_create_or_update(
    AmlCompute(name=CLUSTER, size="Standard_DS3_v2", tier="low_priority", min_instances=0, max_instances=2,
               idle_time_before_scale_down=120)).result()

job = ml_client.jobs.create_or_update(load_job(HERE / "job.yml"))
print(f"submitted {job.name}: {job.status}  (try `amlemu preempt {CLUSTER}` while it runs)")
ml_client.jobs.stream(job.name)  # prints the job's log as it runs; raises if the job fails
download = Path(sys.argv[1] if len(sys.argv) > 1 else HERE / "downloads") / job.name
ml_client.jobs.download(job.name, download_path=download, all=True)
print(f"{ml_client.jobs.get(job.name).status}: result in {download / 'artifacts' / 'outputs' / 'result.json'}")
