"""prepare → train → evaluate with the azure-ai-ml SDK's @pipeline: the same pipeline as pipeline.yml.

    python pipeline_dsl.py [DOWNLOAD_DIR]                  build it in Python, submit, stream, list the steps, download
    python pipeline_dsl.py --yaml [DOWNLOAD_DIR]           submit pipeline.yml instead (as `az ml job create` would)
    python pipeline_dsl.py --force-rerun [DOWNLOAD_DIR]    run every step again rather than reuse earlier results

Against amlemu: `eval "$(amlemu env)"` first. Against Azure: set AMLEMU_SUBSCRIPTION_ID, _RESOURCE_GROUP and
_WORKSPACE to a real workspace and sign in (DefaultAzureCredential); nothing else changes.
"""

import os
import sys
from pathlib import Path

from azure.ai.ml import Input, MLClient, Output, command, load_component, load_job
from azure.ai.ml.dsl import pipeline
from azure.ai.ml.entities import AmlCompute
from azure.core.exceptions import ResourceNotFoundError
from azure.identity import DefaultAzureCredential

HERE = Path(__file__).resolve().parent
ENVIRONMENT = "azureml:AzureML-sklearn-1.5@latest"
args = [a for a in sys.argv[1:] if not a.startswith("--")]

ml_client = MLClient(DefaultAzureCredential(), os.environ["AMLEMU_SUBSCRIPTION_ID"],
                     os.environ["AMLEMU_RESOURCE_GROUP"], os.environ["AMLEMU_WORKSPACE"])
try:
    ml_client.compute.get("cpu-cluster")
except ResourceNotFoundError:
    ml_client.compute.begin_create_or_update(
        AmlCompute(name="cpu-cluster", size="Standard_DS3_v2", min_instances=0, max_instances=2)).result()

# Two steps are component files, the third an inline command (the SDK registers it as an anonymous component).
prep_component = load_component(HERE / "components" / "prep.yml")
train_component = load_component(HERE / "components" / "train.yml")
evaluate_command = command(
    name="evaluate", code=HERE / "src", environment=ENVIRONMENT,
    command="python evaluate.py --model ${{inputs.model}} --test-data ${{inputs.test_data}} "
            "--metrics ${{outputs.metrics}}",
    inputs={"model": Input(type="uri_folder"), "test_data": Input(type="uri_folder")},
    outputs={"metrics": Output(type="uri_folder")})


@pipeline(default_compute="cpu-cluster", display_name="flowers-pipeline",
          description="Split the flowers data, train a classifier, evaluate it on the held-out rows.")
def flowers_pipeline(raw_data: Input, C: float = 0.5):
    prep = prep_component(raw_data=raw_data, test_size=0.3)  # the variables name the steps: prep, train, evaluate
    train = train_component(train_data=prep.outputs.train_data, C=C)
    evaluate = evaluate_command(model=train.outputs.model, test_data=prep.outputs.test_data)
    evaluate.compute = "serverless"
    return {"model": train.outputs.model, "evaluation": evaluate.outputs.metrics}


if "--yaml" in sys.argv:
    job = load_job(HERE / "pipeline.yml")
else:
    job = flowers_pipeline(raw_data=Input(type="uri_file", path=str(HERE.parent / "sklearn-train/data/flowers.csv")))
    job.outputs.evaluation.path = "azureml://datastores/workspaceblobstore/paths/pipelines/${{name}}/evaluation/"
if "--force-rerun" in sys.argv:
    job.settings.force_rerun = True

job = ml_client.jobs.create_or_update(job, experiment_name="amlemu-pipelines")
print(f"submitted {job.name}")
ml_client.jobs.stream(job.name)  # the pipeline's log: each step submitted and finished; raises if one fails
for step in ml_client.jobs.list(parent_job_name=job.name):
    print(f"  {step.display_name:9} {step.name} {step.status} reused: {step.properties.get('azureml.isreused', 'false')}")
download = Path(args[0] if args else HERE / "downloads") / job.name
ml_client.jobs.download(job.name, download_path=download, output_name="evaluation")
print((download / "named-outputs" / "evaluation" / "metrics.json").read_text())
