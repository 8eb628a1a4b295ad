"""Train, register, deploy blue, add green, split traffic 90/10, then move it all to green: a blue/green
rollout of ../sklearn-train's model behind a managed online endpoint, with the azure-ai-ml SDK.

Against amlemu: `eval "$(amlemu env)"` first. Against Azure: set AMLEMU_SUBSCRIPTION_ID, _RESOURCE_GROUP and
_WORKSPACE to a real workspace and sign in (DefaultAzureCredential); nothing else changes.

    python deploy.py [ENDPOINT_NAME]      # default: flowers-<4 hex>, as endpoint names are unique per region
"""

import json
import os
import secrets
import sys
import urllib.request
from collections import Counter
from pathlib import Path

from azure.ai.ml import MLClient, load_job, load_online_deployment, load_online_endpoint
from azure.ai.ml.entities import AmlCompute, Model
from azure.identity import DefaultAzureCredential

HERE = Path(__file__).parent
REQUEST = HERE / "sample-request.json"
CLUSTER = "cpu-cluster"

ml_client = MLClient(DefaultAzureCredential(), os.environ["AMLEMU_SUBSCRIPTION_ID"],
                     os.environ["AMLEMU_RESOURCE_GROUP"], os.environ["AMLEMU_WORKSPACE"])
name = sys.argv[1] if len(sys.argv) > 1 else f"flowers-{secrets.token_hex(2)}"

# 1. Train: the sklearn-train sample, as its submit.py does.
ml_client.compute.begin_create_or_update(
    AmlCompute(name=CLUSTER, size="Standard_DS3_v2", min_instances=0, max_instances=2,
               idle_time_before_scale_down=120)).result()
job = ml_client.jobs.create_or_update(load_job(HERE.parent / "sklearn-train" / "job.yml"))
print(f"training: job {job.name}")
ml_client.jobs.stream(job.name)

# 2. Register the job's named output `model` (a folder holding model.pkl).
model = ml_client.models.create_or_update(Model(name="sklearn-flowers", type="custom_model",
                                                path=f"azureml://jobs/{job.name}/outputs/model"))
print(f"registered model {model.name}:{model.version}")


def deployment(color: str):
    spec = load_online_deployment(HERE / f"{color}.yml")
    spec.endpoint_name, spec.model = name, f"azureml:{model.name}:{model.version}"
    return ml_client.online_deployments.begin_create_or_update(spec).result()


def set_traffic(**weights: int) -> None:
    endpoint = ml_client.online_endpoints.get(name)
    endpoint.traffic = weights
    ml_client.online_endpoints.begin_create_or_update(endpoint).result()
    print(f"traffic: {ml_client.online_endpoints.get(name).traffic}")


def who_answers(requests: int) -> Counter:
    """Call the scoring URL as any HTTP client would (a key in the Authorization header), count the colours."""
    endpoint, key = ml_client.online_endpoints.get(name), ml_client.online_endpoints.get_keys(name).primary_key
    seen = Counter()
    for _ in range(requests):
        call = urllib.request.Request(endpoint.scoring_uri, data=REQUEST.read_bytes(), method="POST", headers={
            "Authorization": f"Bearer {key}", "Content-Type": "application/json"})
        with urllib.request.urlopen(call, timeout=30) as answer:
            seen[json.loads(answer.read())["deployment"]] += 1
    return seen


# 3. The endpoint, then blue with all the traffic.
endpoint = load_online_endpoint(HERE / "endpoint.yml")
endpoint.name = name
ml_client.online_endpoints.begin_create_or_update(endpoint).result()
print(f"endpoint {name}: {ml_client.online_endpoints.get(name).scoring_uri}")
deployment("blue")
set_traffic(blue=100)
print("blue answers:", ml_client.online_endpoints.invoke(endpoint_name=name, request_file=str(REQUEST)))

# 4. Green beside it: try it alone (the header pins a deployment), then give it 10 % of the traffic.
deployment("green")
print("green, pinned:", ml_client.online_endpoints.invoke(endpoint_name=name, deployment_name="green",
                                                          request_file=str(REQUEST)))
set_traffic(blue=90, green=10)
print("200 requests at 90/10:", dict(who_answers(200)))

# 5. Green takes everything; blue goes.
set_traffic(blue=0, green=100)
print("50 requests at 0/100:", dict(who_answers(50)))
ml_client.online_deployments.begin_delete(name="blue", endpoint_name=name).result()
print(f"blue deleted. Logs of green: ml_client.online_deployments.get_logs('green', '{name}', lines=20)")
print(f"done: delete the endpoint with ml_client.online_endpoints.begin_delete('{name}')")
