"""Train on a compute cluster with a command job: the same test against Azure Machine Learning and against amlemu.

Nothing in it names either: the workspace comes from AZURE_SUBSCRIPTION_ID, AZURE_RESOURCE_GROUP and
AZUREML_WORKSPACE_NAME, the credential from DefaultAzureCredential. docs/migrating.md shows the two environments.
"""

import json
import os

import pytest
from azure.ai.ml import MLClient, Output, command
from azure.ai.ml.entities import AmlCompute, Environment
from azure.identity import DefaultAzureCredential

CLUSTER = os.environ.get("TRAIN_CLUSTER", "train-cluster")

TRAIN = '''
import argparse, json, os, random

parser = argparse.ArgumentParser()
parser.add_argument("--epochs", type=int)
parser.add_argument("--model", help="the output folder")
args = parser.parse_args()

# y = 3x + 2 with a little noise, fitted by gradient descent
random.seed(0)
points = [(x / 10, 3 * x / 10 + 2 + random.gauss(0, 0.1)) for x in range(50)]
w = b = 0.0
for epoch in range(args.epochs):
    for x, y in points:
        error = w * x + b - y
        w, b = w - 0.01 * error * x, b - 0.01 * error
    loss = sum((w * x + b - y) ** 2 for x, y in points) / len(points)
    print(f"epoch {epoch}: loss {loss:.4f}")

os.makedirs(args.model, exist_ok=True)
with open(os.path.join(args.model, "model.json"), "w") as f:
    json.dump({"w": w, "b": b, "loss": loss}, f)
'''


@pytest.fixture(scope="module")
def ml_client() -> MLClient:
    return MLClient(DefaultAzureCredential(), os.environ["AZURE_SUBSCRIPTION_ID"],
                    os.environ["AZURE_RESOURCE_GROUP"], os.environ["AZUREML_WORKSPACE_NAME"])


@pytest.fixture(scope="module")
def cluster(ml_client) -> str:
    """A CPU cluster that scales from zero: it costs nothing while no job runs."""
    ml_client.compute.begin_create_or_update(AmlCompute(
        name=CLUSTER, size="Standard_DS3_v2", min_instances=0, max_instances=1,
        idle_time_before_scale_down=120)).result()
    return CLUSTER


def test_a_command_job_trains_a_model_on_the_cluster(ml_client, cluster, tmp_path):
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "train.py").write_text(TRAIN)
    job = ml_client.jobs.create_or_update(command(
        code=tmp_path / "src",
        command="python train.py --epochs ${{inputs.epochs}} --model ${{outputs.model}}",
        inputs={"epochs": 20},
        outputs={"model": Output(type="uri_folder")},
        environment=Environment(image="python:3.11-slim"),
        compute=cluster,
        experiment_name="migration-guide",
        display_name="linear model",
    ))

    ml_client.jobs.stream(job.name)  # prints the log as it runs; returns once the job has ended

    assert ml_client.jobs.get(job.name).status == "Completed"
    ml_client.jobs.download(job.name, download_path=tmp_path / "out", output_name="model")
    model = json.loads((tmp_path / "out" / "named-outputs" / "model" / "model.json").read_text())
    assert abs(model["w"] - 3) < 0.2 and abs(model["b"] - 2) < 0.3
