"""Runs in a fresh interpreter with the `amlemu env` variables: batch endpoints through the SDK (create, default
deployment, get, list, delete), model deployments (a scoring script; an MLflow model without one), a pipeline component deployment (a
command component refused; invoked, a pipeline job), invoke (a local
folder, a datastore file, a data asset, an output location, a named deployment), list_jobs, jobs.get of a batch
job, and refusals; prints JSON of what the SDK saw. No controller runs: the jobs stay NotStarted.

Usage: python batch_probe.py WORK_DIR
"""

import json
import os
import sys
from pathlib import Path

from azure.ai.ml import Input, MLClient, Output, load_component
from azure.ai.ml.entities import (
    AmlCompute,
    BatchEndpoint,
    BatchRetrySettings,
    CodeConfiguration,
    CommandComponent,
    Data,
    Environment,
    Model,
    ModelBatchDeployment,
    ModelBatchDeploymentSettings,
    PipelineComponentBatchDeployment,
)
from azure.core.exceptions import HttpResponseError
from azure.identity import DefaultAzureCredential

STORE = "azureml://datastores/workspaceblobstore/paths"


def _files(work: Path) -> None:
    for folder, files in (("src", {"score.py": "def init():\n    pass\n\n\ndef run(batch):\n    return batch\n"}),
                          ("model", {"weights.txt": "42"}),
                          ("flow", {"MLmodel": "flavors:\n  python_function:\n    loader_module: x\n"}),
                          ("data", {"a.csv": "x\n1\n", "b.csv": "x\n2\n"})):
        (work / folder).mkdir(parents=True, exist_ok=True)
        for name, text in files.items():
            (work / folder / name).write_text(text)


def _error(call) -> str:
    try:
        call()
    except HttpResponseError as exc:
        return f"{exc.status_code} {exc.message}"
    return "no error"


def _deployment(work: Path, name: str, **settings) -> ModelBatchDeployment:
    return ModelBatchDeployment(
        name=name, endpoint_name="scorer", model=Model(path=str(work / "model"), name="batch-model"),
        code_configuration=CodeConfiguration(code=str(work / "src"), scoring_script="score.py"),
        environment=Environment(image="python:3.11-slim"), compute="cpu",
        settings=ModelBatchDeploymentSettings(**settings))


def crud(ml: MLClient, work: Path) -> dict:
    seen = {}
    ml.compute.begin_create_or_update(AmlCompute(name="cpu", size="Standard_DS3_v2", max_instances=2))  # no controller
    endpoint = ml.batch_endpoints.begin_create_or_update(BatchEndpoint(name="scorer", description="d")).result()
    seen["endpoint"] = [endpoint.auth_mode, endpoint.scoring_uri, endpoint.provisioning_state, endpoint.description]
    made = ml.batch_deployments.begin_create_or_update(_deployment(
        work, "blue", mini_batch_size=2, max_concurrency_per_instance=2, output_action="append_row",
        retry_settings=BatchRetrySettings(max_retries=1, timeout=45), logging_level="info",
        environment_variables={"A": "1"})).result()
    got = ml.batch_deployments.get("blue", "scorer")
    seen["deployment"] = [made.provisioning_state, got.compute, got.mini_batch_size, got.max_concurrency_per_instance,
                          got.output_action, got.output_file_name, got.error_threshold, got.retry_settings.max_retries,
                          got.retry_settings.timeout, got.environment_variables, got.code_configuration.scoring_script]
    flow = ml.models.create_or_update(Model(name="flow", path=str(work / "flow"), type="mlflow_model"))
    mlflow = ml.batch_deployments.begin_create_or_update(ModelBatchDeployment(
        name="mlflow", endpoint_name="scorer", model=flow, compute="cpu")).result()
    seen["mlflow"] = [mlflow.provisioning_state, mlflow.code_configuration, mlflow.mini_batch_size]
    seen["deployments"] = sorted(d.name for d in ml.batch_deployments.list("scorer"))
    endpoint = ml.batch_endpoints.get("scorer")
    seen["no_default"] = endpoint.defaults.deployment_name
    seen["invoke_no_default"] = _error(lambda: ml.batch_endpoints.invoke(
        endpoint_name="scorer", input=Input(type="uri_folder", path=str(work / "data"))))
    endpoint.defaults.deployment_name = "blue"
    ml.batch_endpoints.begin_create_or_update(endpoint).result()
    seen["default"] = ml.batch_endpoints.get("scorer").defaults.deployment_name
    seen["listed"] = [e.name for e in ml.batch_endpoints.list()]
    seen["missing_compute"] = _error(lambda: ml.batch_deployments.begin_create_or_update(
        ModelBatchDeployment(name="nowhere", endpoint_name="scorer", model=flow, compute="gpu")).result())
    return seen


def invoke(ml: MLClient, work: Path) -> dict:
    seen = {}
    folder = ml.batch_endpoints.invoke(endpoint_name="scorer", input=Input(type="uri_folder", path=str(work / "data")))
    seen["folder"] = folder._to_dict()
    uploaded = ml.jobs.get(folder.name).inputs["UriFolder"].path  # where the SDK uploaded the folder
    one_file = ml.batch_endpoints.invoke(
        endpoint_name="scorer", deployment_name="mlflow", input=Input(type="uri_file", path=uploaded + "a.csv"),
        outputs={"score": Output(type="uri_file", path=f"{STORE}/out/scores.csv")})
    seen["file"] = one_file._to_dict()
    ml.data.create_or_update(Data(name="to-score", version="1", type="uri_folder", path=uploaded))
    # named again: SDK 1.35.2 keeps the last deployment_name in a module-level header dict for later invokes
    seen["asset"] = ml.batch_endpoints.invoke(
        endpoint_name="scorer", deployment_name="blue", input=Input(type="uri_folder", path="azureml:to-score:1"))
    seen["asset"] = seen["asset"]._to_dict()
    seen["empty"] = _error(lambda: ml.batch_endpoints.invoke(
        endpoint_name="scorer", input=Input(type="uri_folder", path=f"{STORE}/nothing/here/")))
    seen["listed"] = sorted(j.name for j in ml.batch_endpoints.list_jobs("scorer"))
    seen["by_mlflow"] = [j.name for j in ml.batch_deployments.list_jobs("scorer", name="mlflow")]
    job = ml.jobs.get(folder.name)
    seen["job"] = [type(job).__name__, job.status, job.tags, job.experiment_name]
    return seen


PIPELINE_YAML = """\
$schema: https://azuremlschemas.azureedge.net/latest/pipelineComponent.schema.json
type: pipeline
name: prep_and_score
inputs:
  input_data: {type: uri_folder}
  score_mode: {type: string, default: append}
outputs:
  scores: {type: uri_folder, mode: upload}
jobs:
  prep_job:
    type: command
    component: azureml:prep:1
    inputs:
      data: ${{parent.inputs.input_data}}
      mode: ${{parent.inputs.score_mode}}
    outputs:
      out: ${{parent.outputs.scores}}
"""


def pipeline(ml: MLClient, work: Path) -> dict:
    """Last of the invocations: SDK 1.35.2 keeps a deployment_name for every later invoke in the process."""
    seen = {}
    ml.components.create_or_update(CommandComponent(
        name="prep", version="1", command="echo ${{inputs.data}} ${{inputs.mode}} > ${{outputs.out}}/mode.txt",
        inputs={"data": Input(type="uri_folder"), "mode": Input(type="string")}, outputs={"out": Output(
            type="uri_folder")}, code=str(work / "src"), environment=Environment(image="python:3.11-slim")))
    seen["not_a_pipeline"] = _error(lambda: ml.batch_deployments.begin_create_or_update(
        PipelineComponentBatchDeployment(name="cmd", endpoint_name="scorer", component="azureml:prep:1",
                                         settings={"default_compute": "cpu"})).result())
    (work / "pipeline.yml").write_text(PIPELINE_YAML)
    ml.components.create_or_update(load_component(str(work / "pipeline.yml")))
    ml.batch_deployments.begin_create_or_update(PipelineComponentBatchDeployment(
        name="pipe", endpoint_name="scorer", component="azureml:prep_and_score@latest",
        settings={"default_compute": "cpu", "continue_on_step_failure": False})).result()
    pipe = ml.batch_deployments.get("pipe", "scorer")
    seen["pipeline"] = [pipe.name, pipe.properties.get("default_compute"), pipe.properties.get(
        "deployment_configuration_type")]
    seen["missing_input"] = _error(lambda: ml.batch_endpoints.invoke(
        endpoint_name="scorer", deployment_name="pipe", inputs={"score_mode": Input(type="string", default="x")}))
    job = ml.batch_endpoints.invoke(
        endpoint_name="scorer", deployment_name="pipe",
        inputs={"input_data": Input(type="uri_folder", path=str(work / "data")),
                "score_mode": Input(type="string", default="fast")},
        outputs={"scores": Output(type="uri_folder", path=f"{STORE}/pipe-out/")})
    got = ml.jobs.get(job.name)
    seen["pipeline_job"] = [type(got).__name__, got.status, got.tags.get("azureml.jobtype"), sorted(got.jobs),
                            got.inputs["score_mode"]._data, str(got.outputs["scores"].path)]
    seen["pipeline_listed"] = [j.name for j in ml.batch_deployments.list_jobs("scorer", name="pipe")]
    seen["pipeline_job_name"] = job.name
    return seen


def delete(ml: MLClient) -> dict:
    seen = {"delete_default": _error(lambda: ml.batch_deployments.begin_delete("blue", "scorer").result())}
    ml.batch_deployments.begin_delete("mlflow", "scorer").result()
    ml.batch_endpoints.begin_delete("scorer").result()
    seen["after"] = [e.name for e in ml.batch_endpoints.list()]
    seen["jobs_stay"] = len([j for j in ml.jobs.list() if j.tags.get("azureml.batchrun") == "true"])
    return seen


def main() -> None:
    work = Path(sys.argv[1])
    _files(work)
    ml = MLClient(DefaultAzureCredential(), os.environ["AMLEMU_SUBSCRIPTION_ID"], os.environ["AMLEMU_RESOURCE_GROUP"],
                  os.environ["AMLEMU_WORKSPACE"])
    seen = {"crud": crud(ml, work)}
    seen["invoke"] = invoke(ml, work)
    seen["pipeline"] = pipeline(ml, work)
    seen["delete"] = delete(ml)
    print(json.dumps(seen))


if __name__ == "__main__":
    main()
