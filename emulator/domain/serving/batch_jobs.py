"""Invoking a batch endpoint: the POST body read, and the batch job it makes. Pure.

The SDK POSTs `{"properties": {"inputData": {"UriFolder": {"jobInputType": "UriFolder", "uri": ...}}, ...}}` (its
one input named after its type); Azure's REST docs write `InputData`, `JobInputType`, `Uri` with a name of the
caller's, so keys are read whatever their case. Optional: `outputData` (where the scores go: a file, or a folder
the deployment's output file goes in), `outputDataset` ({datastoreId, path}: the SDK's older form), `name`,
`properties.experimentName`, and per-job overrides of the deployment's `miniBatchSize`, `errorThreshold`,
`outputFileName`, `retrySettings` and `compute.instanceCount`.

The job is a pipeline job (Azure's own are), named `batchjob-<guid>`, whose one step `batchscoring` is the
parallel command job; tags and properties say which endpoint and deployment made it, as Azure's do.
"""

import posixpath
from dataclasses import dataclass, field

from emulator.domain import payload
from emulator.domain.serving import batch_deployments
from emulator.domain.storage import datastores
from emulator.errors import ValidationFailed

P = "properties"
INPUTS = f"{P}.inputData"
OUTPUTS = f"{P}.outputData"
STEP = "batchscoring"  # the step's name, which the SDK's jobs.download looks for
SCORE = "score"  # the step's output holding the predictions (BATCH_JOB_CHILD_RUN_OUTPUT_NAME)
_DATA_TYPES = {"urifolder": "uri_folder", "urifile": "uri_file", "mltable": "mltable"}
_OVERRIDES = ("miniBatchSize", "errorThreshold", "outputFileName", "retrySettings")


def _keyed(value: dict) -> dict:
    """Keys lower-cased: Azure's REST docs spell them InputData, JobInputType, Uri; the SDK inputData, jobInputType."""
    return {k.lower(): v for k, v in value.items()}


@dataclass(frozen=True)
class Output:
    folder: str  # the datastore URI of the folder the output file goes in
    file_name: str | None  # None: the deployment's outputFileName


@dataclass(frozen=True)
class Invocation:
    inputs: dict[str, dict]  # name -> a job input entry: {jobInputType, uri, mode} or {jobInputType: literal, value}
    outputs: dict[str, dict]  # name -> {jobOutputType: uri_file | uri_folder, uri}, as outputData names them
    dataset: Output | None = None  # outputDataset, the SDK's older way to say where a model deployment's file goes
    overrides: dict = field(default_factory=dict)  # camelCase deployment fields this job runs with instead
    instance_count: int | None = None
    experiment: str | None = None


def _input(name: str, value: object) -> dict:
    target = f"{INPUTS}.{name}"
    entry = _keyed(payload.obj(value, target, required=True))
    kind = entry.get("jobinputtype")
    if isinstance(kind, str) and kind.lower() == "literal":  # a pipeline component's string, number or boolean
        if entry.get("value") is None:
            raise ValidationFailed(f"{target}.value is missing: a literal input needs a value.", target=f"{target}.value")
        text = str(entry["value"]).lower() if isinstance(entry["value"], bool) else str(entry["value"])
        return {"jobInputType": "literal", "value": text}
    data_type = _DATA_TYPES.get(kind.lower()) if isinstance(kind, str) else None
    if data_type is None:
        raise ValidationFailed(f"{target}.jobInputType must be UriFolder, UriFile, MLTable or Literal, got {kind!r}.",
                               target=f"{target}.jobInputType")
    uri = entry.get("uri")
    if not isinstance(uri, str) or not uri.strip():
        raise ValidationFailed(f"{target}.uri is empty: name the data to score (a datastore path, a data asset, a "
                               "URL).", target=f"{target}.uri")
    return {"jobInputType": data_type, "uri": uri.strip(), "mode": "ReadOnlyMount"}


def _output(name: str, value: object) -> dict:
    target = f"{OUTPUTS}.{name}"
    entry = _keyed(payload.obj(value, target, required=True))
    kind = entry.get("joboutputtype")
    data_type = _DATA_TYPES.get(kind.lower()) if isinstance(kind, str) else None
    if data_type not in ("uri_file", "uri_folder"):
        raise ValidationFailed(f"{target}.jobOutputType must be UriFile or UriFolder, got {kind!r}.",
                               target=f"{target}.jobOutputType")
    return {"jobOutputType": data_type, "uri": payload.required_string(entry.get("uri"), f"{target}.uri").strip()}


def _dataset(props: dict) -> Output | None:
    dataset = _keyed(payload.obj(props.get("outputdataset"), f"{P}.outputDataset"))
    if not dataset.get("path"):
        return None
    store = datastores.BLOB_STORE
    if isinstance(dataset.get("datastoreid"), str):
        store = dataset["datastoreid"].rstrip("/").rsplit("/", 1)[-1]
    return Output(f"azureml://datastores/{store}/paths/{dataset['path'].strip('/')}/", None)


def model_output(invocation: Invocation) -> Output | None:
    """Where a model deployment's output file goes: the one output named (a file, or a folder for the deployment's
    outputFileName), else outputDataset, else None (Azure's default place)."""
    if len(invocation.outputs) > 1:
        raise ValidationFailed(f"{OUTPUTS} names {len(invocation.outputs)} outputs; a model deployment writes one "
                               "(score).", target=OUTPUTS)
    for name, entry in invocation.outputs.items():
        if entry["jobOutputType"] == "uri_file":
            folder, file_name = posixpath.split(entry["uri"])
            return Output(folder + "/", batch_deployments.file_name(file_name, f"{OUTPUTS}.{name}.uri"))
        return Output(entry["uri"].rstrip("/") + "/", None)
    return invocation.dataset


def parsed(body: object) -> Invocation:
    body = _keyed(payload.obj(body, "body", required=True))
    payload.finite(body)
    props = _keyed(payload.obj(body.get("properties"), P, required=True))
    inputs = payload.obj(props.get("inputdata"), INPUTS)
    if props.get("dataset") is not None:
        raise ValidationFailed(f"{P}.dataset (a v1 dataset) is not supported: give {INPUTS}.", target=f"{P}.dataset")
    if not inputs:
        raise ValidationFailed(f"{INPUTS} is empty: a batch job needs the data to score (input=Input(...)).",
                               target=INPUTS)
    extra = _keyed(payload.obj(props.get("properties"), f"{P}.properties"))
    given = {key: props[key.lower()] for key in _OVERRIDES if props.get(key.lower()) is not None}
    overrides = {k: v for k, v in batch_deployments.parallel_fields(given).items() if k in given}
    compute = _keyed(payload.obj(props.get("compute"), f"{P}.compute"))
    count = payload.count(compute.get("instancecount"), f"{P}.compute.instanceCount")
    outputs = payload.obj(props.get("outputdata"), OUTPUTS)
    return Invocation(inputs={name: _input(name, value) for name, value in inputs.items()},
                      outputs={name: _output(name, value) for name, value in outputs.items()},
                      dataset=_dataset(props), overrides=overrides, instance_count=count,
                      experiment=payload.string(extra.get("experimentname"), f"{P}.properties.experimentName"))


def job_name(guid: str) -> str:
    return f"batchjob-{guid}"


def output_folder(output: Output | None, step_job: str) -> str:
    """Where the step writes its output file: where the caller asked, else Azure's default."""
    if output is not None:
        return output.folder
    return f"azureml://datastores/{datastores.BLOB_STORE}/paths/azureml/{step_job}/{SCORE}/"


def tags(endpoint: str, deployment: str) -> dict[str, str]:
    """What the SDK's jobs.download reads (azureml.batchrun, and a jobtype other than a pipeline's: then it
    downloads the `score` output of the step's job)."""
    return {"azureml.batchrun": "true", "azureml.deploymentname": deployment, "azureml.endpointname": endpoint,
            "azureml.jobtype": "azureml.batchjob"}


def properties(endpoint: str, deployment: str, compute: str) -> dict[str, str]:
    return {"azureml.endpointname": endpoint, "azureml.deploymentname": deployment,
            "azureml.runLineageType": "batchDeployment", "azureml.runsource": "azureml.PipelineRun",
            "azureml.defaultComputeName": compute, "azureml.defaultDataStoreName": datastores.BLOB_STORE,
            "runSource": "BatchDeployment", "runType": "HTTP"}


def parent_body(name: str, endpoint: str, deployment: str, compute: str, invocation: Invocation,
                display_name: str) -> dict:
    """The batch job's `properties` as jobs.get shows them: a pipeline job of the endpoint's experiment (Azure's
    default experiment of a batch job is its endpoint's name)."""
    return {"jobType": "Pipeline", "displayName": display_name, "description": None,
            "experimentName": invocation.experiment or endpoint, "isArchived": False,
            "tags": tags(endpoint, deployment),
            "properties": properties(endpoint, deployment, compute.rstrip("/").rsplit("/", 1)[-1]),
            "inputs": {n: {k: v for k, v in e.items() if k != "mode"} for n, e in invocation.inputs.items()},
            "outputs": {}, "jobs": {}, "settings": {"default_compute": compute, "_source": "BatchDeployment"},
            "computeId": compute}
