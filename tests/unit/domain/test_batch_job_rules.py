"""Invoking a batch endpoint: the POST body (the SDK's and Azure's REST docs' spellings), where the output goes,
and the batch job's tags and properties as the SDK's jobs.download reads them. Pure."""

import pytest

from emulator.domain.serving import batch_jobs
from emulator.errors import ValidationFailed

FOLDER = "azureml://datastores/workspaceblobstore/paths/in/"


def sdk_body(**props) -> dict:
    """What batch_endpoints.invoke(input=Input(type="uri_folder", path=...)) sends."""
    return {"properties": {"inputData": {"UriFolder": {"jobInputType": "UriFolder", "uri": FOLDER}}, **props}}


def test_the_sdks_body_reads_as_one_folder_input():
    invocation = batch_jobs.parsed(sdk_body())
    assert invocation.inputs == {"UriFolder": {"jobInputType": "uri_folder", "uri": FOLDER, "mode": "ReadOnlyMount"}}
    assert invocation.output is None and invocation.overrides == {} and invocation.instance_count is None


def test_azures_rest_spelling_reads_the_same():
    body = {"Properties": {"InputData": {"heart": {"JobInputType": "UriFile", "Uri": FOLDER + "a.csv"}},
                           "OutputData": {"score": {"JobOutputType": "UriFile",
                                                    "Uri": "azureml://datastores/workspaceblobstore/paths/o/p.csv"}}}}
    invocation = batch_jobs.parsed(body)
    assert invocation.inputs["heart"]["jobInputType"] == "uri_file"
    assert invocation.output == batch_jobs.Output("azureml://datastores/workspaceblobstore/paths/o/", "p.csv")


def test_an_output_folder_keeps_the_deployments_file_name():
    body = sdk_body(outputData={"score": {"jobOutputType": "UriFolder", "uri": "azureml://datastores/x/paths/o"}})
    assert batch_jobs.parsed(body).output == batch_jobs.Output("azureml://datastores/x/paths/o/", None)


def test_the_sdks_older_output_dataset_names_a_folder():
    body = sdk_body(outputDataset={"datastoreId": "/subscriptions/s/.../datastores/workspaceblobstore", "path": "o/"})
    assert batch_jobs.parsed(body).output.folder == "azureml://datastores/workspaceblobstore/paths/o/"


def test_overrides_instance_count_and_experiment():
    body = sdk_body(miniBatchSize=3, errorThreshold=2, retrySettings={"maxRetries": 0, "timeout": "PT5S"},
                    compute={"instanceCount": 2}, properties={"experimentName": "exp"})
    invocation = batch_jobs.parsed(body)
    assert invocation.overrides == {"miniBatchSize": 3, "errorThreshold": 2,
                                    "retrySettings": {"maxRetries": 0, "timeout": "PT5S"}}
    assert (invocation.instance_count, invocation.experiment) == (2, "exp")


@pytest.mark.parametrize(("body", "target"), [
    ({"properties": {}}, "properties.inputData"),
    ({"properties": {"inputData": {}}}, "properties.inputData"),
    ({"properties": {"inputData": {"x": {"jobInputType": "UriFolder", "uri": "  "}}}}, "properties.inputData.x.uri"),
    ({"properties": {"inputData": {"x": {"jobInputType": "UriFolder"}}}}, "properties.inputData.x.uri"),
    ({"properties": {"inputData": {"x": {"jobInputType": "Literal", "value": "1"}}}},
     "properties.inputData.x.jobInputType"),
    (sdk_body(miniBatchSize="lots"), "properties.miniBatchSize"),
    (sdk_body(outputData={"a": {"jobOutputType": "UriFile", "uri": "azureml://datastores/x/paths/a.csv"},
                          "b": {"jobOutputType": "UriFile", "uri": "azureml://datastores/x/paths/b.csv"}}),
     "properties.outputData"),
    (sdk_body(outputData={"score": {"jobOutputType": "MLTable", "uri": "azureml://datastores/x/paths/t"}}),
     "properties.outputData.score.jobOutputType"),
    (sdk_body(outputData={"score": {"jobOutputType": "UriFile", "uri": "azureml://datastores/x/paths/"}}),
     "properties.outputData.score.uri"),
    (sdk_body(compute={"instanceCount": 0}), "properties.compute.instanceCount"),
    (sdk_body(dataset="v1"), "properties.dataset"),
])
def test_bad_invocations_name_the_field(body, target):
    with pytest.raises(ValidationFailed) as caught:
        batch_jobs.parsed(body)
    assert caught.value.target == target


def test_the_output_goes_where_asked_else_to_azures_default():
    assert batch_jobs.output_folder(batch_jobs.parsed(sdk_body()), "child") == \
        "azureml://datastores/workspaceblobstore/paths/azureml/child/score/"
    asked = sdk_body(outputData={"score": {"jobOutputType": "UriFolder", "uri": "azureml://datastores/x/paths/o"}})
    assert batch_jobs.output_folder(batch_jobs.parsed(asked), "child") == "azureml://datastores/x/paths/o/"


def test_the_job_is_a_pipeline_job_tagged_as_azure_tags_batch_jobs():
    body = batch_jobs.parent_body("batchjob-1", "scorer", "blue", "/subs/.../computes/cpu",
                                  batch_jobs.parsed(sdk_body()), "batchjob-1")
    assert body["jobType"] == "Pipeline" and body["experimentName"] == "scorer" and body["jobs"] == {}
    # jobs.download reads these: a batch run whose job type is not a pipeline's downloads the step's `score`
    assert body["tags"]["azureml.batchrun"] == "true" and body["tags"]["azureml.jobtype"] != "azureml.pipelinejob"
    assert body["properties"]["azureml.defaultComputeName"] == "cpu"
    assert body["inputs"] == {"UriFolder": {"jobInputType": "uri_folder", "uri": FOLDER}}
    assert batch_jobs.job_name("abc") == "batchjob-abc"
