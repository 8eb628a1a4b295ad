"""Batch endpoints with the real SDK against a composed stack: a model deployment of a tiny scoring script on a
python:3.11-slim environment, invoked through the SDK (the endpoint's default deployment, a local folder) and with a
plain REST POST to the scoring URI (a bearer token for https://ml.azure.com, the output file named): each batch job
runs its `batchscoring` step on the cluster, and predictions.csv comes back with jobs.download, one row per file. A
pipeline component deployment runs its component's steps on the cluster as a pipeline job."""

import os
from pathlib import Path

import httpx
import pytest
from azure.ai.ml import Input
from azure.ai.ml._artifacts._artifact_utilities import download_artifact_from_aml_uri
from azure.ai.ml.entities import (
    AmlCompute,
    BatchEndpoint,
    BatchRetrySettings,
    CodeConfiguration,
    Data,
    Environment,
    Model,
    ModelBatchDeployment,
    ModelBatchDeploymentSettings,
)

from tests.e2e.pipeline_runs import statuses, steps, wait_ended

pytestmark = pytest.mark.e2e
CLUSTER, ENDPOINT = "batch-cluster", "batch-scorer"
SCORE = """import os
from pathlib import Path


def init():
    global weight
    # as Azure's docs read a model registered from a folder: under AZUREML_MODEL_DIR by the folder's name
    weight = (Path(os.environ["AZUREML_MODEL_DIR"]) / "model" / "weight.txt").read_text().strip()


def run(mini_batch):
    return [f"{os.path.basename(path)},{Path(path).read_text().strip()},{weight}" for path in mini_batch]
"""


@pytest.fixture(scope="module")
def deployed(ml_client, tmp_path_factory):
    work = tmp_path_factory.mktemp("batch")
    for folder, files in (("src", {"score.py": SCORE}), ("model", {"weight.txt": "w7"}),
                          ("data", {f"f{n}.txt": str(n) for n in range(5)})):
        (work / folder).mkdir()
        for name, text in files.items():
            (work / folder / name).write_text(text)
    ml_client.compute.begin_create_or_update(AmlCompute(name=CLUSTER, size="Standard_D2_v3", min_instances=0,
                                                        max_instances=1, idle_time_before_scale_down=120)).result()
    ml_client.batch_endpoints.begin_create_or_update(BatchEndpoint(name=ENDPOINT)).result()
    ml_client.batch_deployments.begin_create_or_update(ModelBatchDeployment(
        name="blue", endpoint_name=ENDPOINT, model=Model(path=str(work / "model"), name="batch-weights"),
        code_configuration=CodeConfiguration(code=str(work / "src"), scoring_script="score.py"),
        environment=Environment(image="python:3.11-slim"), compute=CLUSTER,
        settings=ModelBatchDeploymentSettings(mini_batch_size=2, max_concurrency_per_instance=2,
                                              retry_settings=BatchRetrySettings(max_retries=1, timeout=60)))).result()
    endpoint = ml_client.batch_endpoints.get(ENDPOINT)
    endpoint.defaults.deployment_name = "blue"
    ml_client.batch_endpoints.begin_create_or_update(endpoint).result()
    yield work
    ml_client.batch_endpoints.begin_delete(ENDPOINT).result()
    ml_client.compute.begin_delete(CLUSTER).result()


ROWS = [f"f{n}.txt,{n},w7" for n in range(5)]


def _ended(ml_client, job_dir, name: str) -> str:
    """The batch job's end; when it did not complete, why (its step's error and log tail) in the message."""
    status = wait_ended(ml_client, name, timeout=150)
    if status != "Completed":
        step = steps(ml_client, name).get("batchscoring")
        logs = job_dir(step.name) if step else None
        tail = (logs / "user_logs" / "std_log.txt").read_text()[-3000:] if logs and \
            (logs / "user_logs" / "std_log.txt").exists() else ""
        errors = (logs / "logs" / "user" / "error.txt").read_text()[-2000:] if logs and \
            (logs / "logs" / "user" / "error.txt").exists() else ""
        pytest.fail(f"{name} {status}: {ml_client.jobs.get(step.name).__dict__.get('_status') if step else ''}"
                    f"\n{tail}\n{errors}")
    return status


def test_sdk_invoke_scores_every_file_and_downloads_predictions(ml_client, job_dir, deployed, tmp_path):
    job = ml_client.batch_endpoints.invoke(endpoint_name=ENDPOINT,
                                           input=Input(type="uri_folder", path=str(deployed / "data")))
    assert _ended(ml_client, job_dir, job.name) == "Completed"
    assert list(steps(ml_client, job.name)) == ["batchscoring"]
    ml_client.jobs.download(job.name, download_path=tmp_path)
    assert sorted((tmp_path / "predictions.csv").read_text().splitlines()) == ROWS
    listed = {j.name: j.status for j in ml_client.batch_endpoints.list_jobs(ENDPOINT)}
    assert listed[job.name] == "Completed"
    ml_client.jobs.stream(job.name)  # the batch job's log, to its end


def test_a_rest_post_with_an_entra_token_writes_the_named_file(ml_client, job_dir, credential, deployed, tmp_path):
    uploaded = ml_client.data.create_or_update(Data(name="batch-files", version="1", type="uri_folder",
                                                    path=str(deployed / "data"))).path
    scoring_uri = ml_client.batch_endpoints.get(ENDPOINT).scoring_uri
    token = credential.get_token("https://ml.azure.com/.default").token
    out = "azureml://datastores/workspaceblobstore/paths/rest-out/scores.csv"
    body = {"properties": {"InputData": {"files": {"JobInputType": "UriFolder", "Uri": uploaded}},
                           "OutputData": {"score": {"JobOutputType": "UriFile", "Uri": out}}}}
    response = httpx.post(scoring_uri, json=body, headers={"Authorization": f"Bearer {token}"},
                          verify=os.environ["REQUESTS_CA_BUNDLE"], timeout=30)
    assert response.status_code == 200, response.text
    assert _ended(ml_client, job_dir, response.json()["name"]) == "Completed"
    download_artifact_from_aml_uri(out, str(tmp_path), ml_client.datastores)
    assert sorted(Path(tmp_path, "scores.csv").read_text().splitlines()) == ROWS


PREPARE = """import sys
from pathlib import Path

source, out = Path(sys.argv[1]), Path(sys.argv[2])
for path in sorted(source.glob("*.txt")):
    (out / path.name).write_text(str(int(path.read_text()) * 10))
"""
SUM = """import sys
from pathlib import Path

prepared, mode, out = Path(sys.argv[1]), sys.argv[2], Path(sys.argv[3])
values = [int(p.read_text()) for p in sorted(prepared.glob("*.txt"))]
(out / "summary.csv").write_text(f"{mode},{len(values)},{sum(values)}\\n")
"""
PIPELINE = """$schema: https://azuremlschemas.azureedge.net/latest/pipelineComponent.schema.json
type: pipeline
name: prepare_and_sum
inputs:
  input_data: {type: uri_folder}
  score_mode: {type: string, default: append}
outputs:
  scores: {type: uri_folder, mode: upload}
jobs:
  prepare_job:
    type: command
    component:
      type: command
      code: src
      environment: {image: "python:3.11-slim"}
      inputs: {data: {type: uri_folder}}
      outputs: {prepared: {type: uri_folder}}
      command: python prepare.py ${{inputs.data}} ${{outputs.prepared}}
    inputs: {data: "${{parent.inputs.input_data}}"}
  sum_job:
    type: command
    component:
      type: command
      code: src
      environment: {image: "python:3.11-slim"}
      inputs: {prepared: {type: uri_folder}, mode: {type: string}}
      outputs: {summary: {type: uri_folder}}
      command: python sum.py ${{inputs.prepared}} ${{inputs.mode}} ${{outputs.summary}}
    inputs:
      prepared: "${{parent.jobs.prepare_job.outputs.prepared}}"
      mode: "${{parent.inputs.score_mode}}"
    outputs: {summary: "${{parent.outputs.scores}}"}
"""


def test_a_pipeline_component_deployment_runs_its_steps_on_the_cluster(ml_client, job_dir, deployed, tmp_path):
    """Azure's batch-scoring-with-preprocessing shape: a pipeline component registered from YAML, deployed with
    PipelineComponentBatchDeployment, invoked with inputs and an output by the component's port names."""
    from azure.ai.ml import Output, load_component
    from azure.ai.ml.entities import PipelineComponentBatchDeployment

    work = tmp_path / "pipe"
    (work / "src").mkdir(parents=True)
    (work / "src" / "prepare.py").write_text(PREPARE)
    (work / "src" / "sum.py").write_text(SUM)
    (work / "pipeline.yml").write_text(PIPELINE)
    component = ml_client.components.create_or_update(load_component(str(work / "pipeline.yml")))
    ml_client.batch_deployments.begin_create_or_update(PipelineComponentBatchDeployment(
        name="prep-sum", endpoint_name=ENDPOINT, component=component,
        settings={"default_compute": CLUSTER, "continue_on_step_failure": False})).result()
    out = "azureml://datastores/workspaceblobstore/paths/pipeline-out/"
    job = ml_client.batch_endpoints.invoke(
        endpoint_name=ENDPOINT, deployment_name="prep-sum",
        inputs={"input_data": Input(type="uri_folder", path=str(deployed / "data")),
                "score_mode": Input(type="string", default="summed")},
        outputs={"scores": Output(type="uri_folder", path=out)})
    assert job.name.startswith("batchjob-")
    assert wait_ended(ml_client, job.name, timeout=150) == "Completed", ml_client.jobs.get(job.name).status
    assert statuses(ml_client, job.name) == {"prepare_job": "Completed", "sum_job": "Completed"}
    download_artifact_from_aml_uri(out, str(tmp_path / "got"), ml_client.datastores)
    assert [p.read_text() for p in (tmp_path / "got").rglob("summary.csv")] == ["summed,5,100\n"]
    assert job.name in [j.name for j in ml_client.batch_deployments.list_jobs(ENDPOINT, name="prep-sum")]
