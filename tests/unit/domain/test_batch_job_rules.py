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
    assert batch_jobs.model_output(invocation) is None and invocation.overrides == {} and invocation.instance_count is None


def test_azures_rest_spelling_reads_the_same():
    body = {"Properties": {"InputData": {"heart": {"JobInputType": "UriFile", "Uri": FOLDER + "a.csv"}},
                           "OutputData": {"score": {"JobOutputType": "UriFile",
                                                    "Uri": "azureml://datastores/workspaceblobstore/paths/o/p.csv"}}}}
    invocation = batch_jobs.parsed(body)
    assert invocation.inputs["heart"]["jobInputType"] == "uri_file"
    assert batch_jobs.model_output(invocation) == batch_jobs.Output("azureml://datastores/workspaceblobstore/paths/o/", "p.csv")


def test_an_output_folder_keeps_the_deployments_file_name():
    body = sdk_body(outputData={"score": {"jobOutputType": "UriFolder", "uri": "azureml://datastores/x/paths/o"}})
    assert batch_jobs.model_output(batch_jobs.parsed(body)) == batch_jobs.Output("azureml://datastores/x/paths/o/", None)


def test_the_sdks_older_output_dataset_names_a_folder():
    body = sdk_body(outputDataset={"datastoreId": "/subscriptions/s/.../datastores/workspaceblobstore", "path": "o/"})
    assert batch_jobs.model_output(batch_jobs.parsed(body)).folder == "azureml://datastores/workspaceblobstore/paths/o/"


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
    ({"properties": {"inputData": {"x": {"jobInputType": "Literal"}}}}, "properties.inputData.x.value"),
    ({"properties": {"inputData": {"x": {"jobInputType": "Dataset", "uri": "a"}}}},
     "properties.inputData.x.jobInputType"),
    (sdk_body(miniBatchSize="lots"), "properties.miniBatchSize"),
    (sdk_body(outputData={"score": {"jobOutputType": "MLTable", "uri": "azureml://datastores/x/paths/t"}}),
     "properties.outputData.score.jobOutputType"),
    (sdk_body(compute={"instanceCount": 0}), "properties.compute.instanceCount"),
    (sdk_body(dataset="v1"), "properties.dataset"),
])
def test_bad_invocations_name_the_field(body, target):
    with pytest.raises(ValidationFailed) as caught:
        batch_jobs.parsed(body)
    assert caught.value.target == target


@pytest.mark.parametrize(("outputs", "target"), [
    ({"a": {"jobOutputType": "UriFile", "uri": "azureml://datastores/x/paths/a.csv"},
      "b": {"jobOutputType": "UriFile", "uri": "azureml://datastores/x/paths/b.csv"}}, "properties.outputData"),
    ({"score": {"jobOutputType": "UriFile", "uri": "azureml://datastores/x/paths/"}}, "properties.outputData.score.uri"),
])
def test_a_model_deployment_writes_one_output_file(outputs, target):
    invocation = batch_jobs.parsed(sdk_body(outputData=outputs))  # a pipeline component's job may have several
    with pytest.raises(ValidationFailed) as caught:
        batch_jobs.model_output(invocation)
    assert caught.value.target == target


def test_a_literal_input_reads_as_a_pipelines_literal():
    body = sdk_body(inputData={"mode": {"jobInputType": "Literal", "value": True}, "n": {"jobInputType": "literal",
                                                                                          "value": 3}})
    assert batch_jobs.parsed(body).inputs == {"mode": {"jobInputType": "literal", "value": "true"},
                                              "n": {"jobInputType": "literal", "value": "3"}}


def test_the_output_goes_where_asked_else_to_azures_default():
    assert batch_jobs.output_folder(batch_jobs.model_output(batch_jobs.parsed(sdk_body())), "child") == \
        "azureml://datastores/workspaceblobstore/paths/azureml/child/score/"
    asked = sdk_body(outputData={"score": {"jobOutputType": "UriFolder", "uri": "azureml://datastores/x/paths/o"}})
    assert batch_jobs.output_folder(batch_jobs.model_output(batch_jobs.parsed(asked)), "child") == "azureml://datastores/x/paths/o/"


def test_the_job_is_a_pipeline_job_tagged_as_azure_tags_batch_jobs():
    body = batch_jobs.parent_body("batchjob-1", "scorer", "blue", "/subs/.../computes/cpu",
                                  batch_jobs.parsed(sdk_body()), "batchjob-1")
    assert body["jobType"] == "Pipeline" and body["experimentName"] == "scorer" and body["jobs"] == {}
    # jobs.download reads these: a batch run whose job type is not a pipeline's downloads the step's `score`
    assert body["tags"]["azureml.batchrun"] == "true" and body["tags"]["azureml.jobtype"] != "azureml.pipelinejob"
    assert body["properties"]["azureml.defaultComputeName"] == "cpu"
    assert body["inputs"] == {"UriFolder": {"jobInputType": "uri_folder", "uri": FOLDER}}
    assert batch_jobs.job_name("abc") == "batchjob-abc"
