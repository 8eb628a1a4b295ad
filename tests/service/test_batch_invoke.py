"""Invoking batch endpoints, in-process through TestClient: the scoring URI takes Azure ML data-plane tokens only,
an invocation makes a batch job (a pipeline job tagged as Azure tags batch jobs) listed by the endpoint and its
deployment, refusals name the field and make nothing, and the controller's pass makes the job's one step,
`batchscoring`, from the deployment (here with a stand-in for the parallel engine's command_body)."""

from datetime import UTC, datetime

import pytest

from emulator.domain.ids import WorkspaceRef
from emulator.domain.jobs import artifacts, pipeline_steps
from emulator.domain.jobs.status import JobStatus
from emulator.domain.storage import datastores
from emulator.services import jobs, parents
from emulator.services.batch_driver import BatchDriver
from tests.service.test_api import API, WS_PATH, assert_arm_error
from tests.service.test_batch_endpoints import ENDPOINTS, batch_ready, deployment_body, endpoint_body, put  # noqa: F401
from tests.service.test_jobs import HISTORY, JOBS, job_names

REF = WorkspaceRef("00000000-0000-0000-0000-000000000000", "amlemu", "amlemu")
SCORING = f"{ENDPOINTS}/scorer/jobs"
MFE = "/mferp/managementfrontend"
FOLDER = "azureml://datastores/workspaceblobstore/paths/in/"
pytestmark = pytest.mark.usefixtures("batch_ready", "blue", "files")


@pytest.fixture
def ml_auth(client, identity_header) -> dict[str, str]:
    """A token for https://ml.azure.com: what azure-ai-ml asks for to invoke and list batch jobs."""
    response = client.get("/msi/token", params={"resource": "https://ml.azure.com"}, headers=identity_header)
    return {"Authorization": f"Bearer {response.json()['access_token']}"}


@pytest.fixture
def blue(client, auth):
    put(client, auth, f"{ENDPOINTS}/scorer/deployments/blue", deployment_body())


@pytest.fixture
def files(app):
    """Two files under in/, and an empty folder empty/, in the workspace blob store."""
    root = app.state.context.settings.data_dir
    for path, content in (("in/a.csv", "x\n1\n"), ("in/sub/b.csv", "x\n2\n")):
        where = root / artifacts.blob_dir(datastores.locate(REF, datastores.BLOB_STORE, path, "x"))
        where.parent.mkdir(parents=True, exist_ok=True)
        where.write_text(content)
    (root / artifacts.blob_dir(datastores.locate(REF, datastores.BLOB_STORE, "empty", "x"))).mkdir(parents=True)


def sdk_body(uri: str = FOLDER, kind: str = "UriFolder", **props) -> dict:
    """What batch_endpoints.invoke(input=Input(type="uri_folder", path=...)) POSTs (captured)."""
    return {"properties": {"inputData": {kind: {"jobInputType": kind, "uri": uri}}, **props}}


def invoke(client, ml_auth, body: dict, deployment: str | None = "blue", expected: int = 200) -> dict:
    headers = {**ml_auth, **({"azureml-model-deployment": deployment} if deployment else {})}
    response = client.post(SCORING, headers=headers, json=body)
    assert response.status_code == expected, response.text
    return response.json()


def test_invoking_makes_a_batch_job_the_sdk_reads(client, auth, ml_auth):
    made = invoke(client, ml_auth, sdk_body())
    name = made["name"]
    assert name.startswith("batchjob-") and made["id"] == f"{SCORING}/{name}"
    props = made["properties"]
    assert props["status"] == "NotStarted" and props["experimentName"] == "scorer"
    step = pipeline_steps.child_name(REF.child_id("jobs", name).lower(), "batchscoring")  # made by the first pass
    assert props["outputData"]["score"]["uri"] == \
        f"{WS_PATH}/datastores/workspaceblobstore/paths/azureml/{step}/score/predictions.csv"
    job = client.get(f"{JOBS}/{name}", params=API, headers=auth).json()["properties"]
    assert job["jobType"] == "Pipeline" and job["status"] == "NotStarted"
    assert job["tags"] == {"azureml.batchrun": "true", "azureml.deploymentname": "blue",
                           "azureml.endpointname": "scorer", "azureml.jobtype": "azureml.batchjob"}
    assert job["properties"]["azureml.defaultComputeName"] == "cpu"
    assert name in job_names(client, auth)
    listed = client.get(f"{MFE}{SCORING}", params={"api-version": "2020-09-01-dataplanepreview"}, headers=ml_auth)
    assert [j["name"] for j in listed.json()["value"]] == [name]
    by_deployment = client.get(f"{MFE}{ENDPOINTS}/scorer/deployments/blue/jobs", headers=ml_auth).json()["value"]
    assert [j["id"] for j in by_deployment] == [f"{ENDPOINTS}/scorer/deployments/blue/jobs/{name}"]


def _step(client, auth, name: str) -> str | None:
    children = client.get(f"{HISTORY}/runs/{name}/children", params=API, headers=auth).json()["value"]
    return children[0]["runId"] if children else None


def test_the_scoring_uri_takes_data_plane_tokens_only(client, auth, ml_auth):
    assert_arm_error(client.post(SCORING, headers={**auth, "azureml-model-deployment": "blue"}, json=sdk_body()), 401,
                     code="InvalidAuthenticationTokenAudience")
    assert_arm_error(client.post(SCORING, json=sdk_body()), 401)
    assert_arm_error(client.get(f"{MFE}{SCORING}", headers=auth), 401)
    assert_arm_error(client.get(f"{ENDPOINTS}/scorer", params=API, headers=ml_auth), 401)  # and not the other way
    assert job_names(client, auth) == []


def test_the_default_deployment_runs_when_none_is_named(client, auth, ml_auth):
    error = assert_arm_error(client.post(SCORING, headers=ml_auth, json=sdk_body()), 400,
                             target="properties.defaults.deploymentName")
    assert "deployment_name" in error["message"]
    put(client, auth, f"{ENDPOINTS}/scorer", endpoint_body(defaults={"deploymentName": "blue"}), 200)
    made = invoke(client, ml_auth, sdk_body(), deployment=None)
    assert made["properties"]["tags"]["azureml.deploymentname"] == "blue"


def test_inputs_a_file_a_data_asset_and_an_output_location(app, client, auth, ml_auth):
    asset = {"properties": {"dataUri": FOLDER, "dataType": "uri_folder"}}
    assert client.put(f"{WS_PATH}/data/ins/versions/1", params=API, headers=auth, json=asset).status_code == 201
    by_asset = invoke(client, ml_auth, sdk_body(f"{WS_PATH}/data/ins/versions/1"))
    assert by_asset["properties"]["inputData"]["UriFolder"]["uri"] == f"{WS_PATH}/data/ins/versions/1"
    out = {"score": {"jobOutputType": "UriFile", "uri": "azureml://datastores/workspaceblobstore/paths/out/p.csv"}}
    one = invoke(client, ml_auth, sdk_body(FOLDER + "a.csv", "UriFile", outputData=out))
    assert one["properties"]["outputData"]["score"]["uri"] == f"{WS_PATH}/datastores/workspaceblobstore/paths/out/p.csv"
    assert one["properties"]["outputFileName"] == "p.csv"
    _pass(app)
    assert fake_command_body.given["settings"].output_file_name == "p.csv"
    assert fake_command_body.given["output_uri"] == "azureml://datastores/workspaceblobstore/paths/out/"
    rest = {"Properties": {"InputData": {"heart": {"JobInputType": "UriFolder", "Uri": FOLDER}}}}  # Azure's REST docs
    assert invoke(client, ml_auth, rest)["properties"]["inputData"]["heart"]["jobInputType"] == "UriFolder"


@pytest.mark.parametrize(("url", "body", "deployment", "status", "target"), [
    (SCORING, sdk_body("azureml://datastores/workspaceblobstore/paths/empty/"), "blue", 400,
     "properties.inputData.UriFolder.uri"),
    (SCORING, sdk_body("azureml://datastores/workspaceblobstore/paths/nothing/"), "blue", 400,
     "properties.inputData.UriFolder.uri"),
    (SCORING, sdk_body(FOLDER, "UriFile"), "blue", 400, "properties.inputData.UriFile.uri"),
    (SCORING, sdk_body(f"{WS_PATH}/data/nope/versions/1"), "blue", 400, "properties.inputData.UriFolder.uri"),
    (SCORING, sdk_body(""), "blue", 400, "properties.inputData.UriFolder.uri"),
    (SCORING, {"properties": {"inputData": {}}}, "blue", 400, "properties.inputData"),
    (SCORING, sdk_body(miniBatchSize="many"), "blue", 400, "properties.miniBatchSize"),
    (SCORING, sdk_body(compute={"instanceCount": 5}), "blue", 400, "properties.compute.instanceCount"),
    (SCORING, sdk_body(outputData={"score": {"jobOutputType": "UriFolder", "uri": "azureml://datastores/x/paths/o"}}),
     "blue", 400, "properties.outputData"),
    (SCORING, sdk_body(), "red", 400, "azureml-model-deployment"),
    # escapes tried: an input or an output climbing out of its datastore
    (SCORING, sdk_body("azureml://datastores/workspaceblobstore/paths/files/../../../amlemu.db"), "blue", 400,
     "properties.inputData.UriFolder.uri"),
    (SCORING, sdk_body(outputData={"score": {"jobOutputType": "UriFolder",
                                             "uri": "azureml://datastores/workspaceblobstore/paths/../../ca/"}}),
     "blue", 400, "properties.outputData"),
    (f"{ENDPOINTS}/ghost/jobs", sdk_body(), "blue", 404, "endpointName"),
])
def test_bad_invocations_name_the_field_and_make_nothing(client, auth, ml_auth, url, body, deployment, status, target):
    response = client.post(url, headers={**ml_auth, "azureml-model-deployment": deployment}, json=body)
    assert_arm_error(response, status, target=target)
    assert job_names(client, auth, listViewType="All") == []


def fake_command_body(settings, **fields) -> dict:
    """Stands in for parallel.command_body: records what it was given, returns a command job that runs."""
    fake_command_body.given = {"settings": settings, **fields}
    return {"properties": {"jobType": "Command", "command": "echo scoring", "displayName": fields["display_name"],
                           "experimentName": fields["experiment_name"], "codeId": fields["code_id"],
                           "environmentId": fields["environment_id"], "computeId": fields["compute_id"],
                           "inputs": {fields["input_name"]: fields["input_entry"]},
                           "outputs": {"score": {"jobOutputType": "uri_folder", "uri": fields["output_uri"]}},
                           "environmentVariables": fields["environment_variables"],
                           "resources": {"instanceCount": settings.instance_count}}}


def _pass(app, driver: BatchDriver | None = None) -> None:
    """What the controller's parents step does, once."""
    with app.state.context.store.transaction() as repo:
        for parent in repo.parents_in(("NotStarted", "Running", "CancelRequested")):
            parents.drive(repo, parent, driver or BatchDriver(fake_command_body), {}, datetime.now(UTC), None)


def test_a_pass_makes_the_batchscoring_step_from_the_deployment(app, client, auth, ml_auth):
    name = invoke(client, ml_auth, sdk_body(miniBatchSize=1, compute={"instanceCount": 2}))["name"]
    _pass(app)
    given = fake_command_body.given
    settings = given["settings"]
    assert (settings.entry_script, settings.mini_batch_size, settings.instance_count) == ("score.py", 1, 2)
    assert (settings.max_concurrency_per_instance, settings.max_retries, settings.timeout_seconds) == (2, 1, 45.0)
    assert (settings.output_file_name, settings.logging_level) == ("predictions.csv", "INFO")
    assert given["input_entry"] == {"jobInputType": "uri_folder", "uri": FOLDER, "mode": "ReadOnlyMount"}
    assert given["model_id"] == f"{WS_PATH}/models/m/versions/1" and given["environment_variables"] == {"A": "1"}
    assert given["compute_id"] == f"{WS_PATH}/computes/cpu" and given["display_name"] == "batchscoring"
    step = _step(client, auth, name)
    assert given["output_uri"] == f"azureml://datastores/workspaceblobstore/paths/azureml/{step}/score/"
    children = client.get(f"{HISTORY}/runs/{name}/children", params=API, headers=auth).json()["value"]
    assert [(c["displayName"], c["parentRunId"]) for c in children] == [("batchscoring", name)]
    assert client.get(f"{JOBS}/{name}", params=API, headers=auth).json()["properties"]["status"] == "Running"
    with app.state.context.store.transaction() as repo:  # the step completes, as the controller would see it
        child = repo.job(REF.child_id("jobs", step))
        for status in (JobStatus.STARTING, JobStatus.PREPARING, JobStatus.QUEUED, JobStatus.RUNNING,
                       JobStatus.FINALIZING, JobStatus.COMPLETED):
            jobs.transition(child, status, datetime.now(UTC))
    _pass(app)
    assert client.get(f"{JOBS}/{name}", params=API, headers=auth).json()["properties"]["status"] == "Completed"
    listed = client.get(f"{MFE}{SCORING}", headers=ml_auth).json()["value"]
    assert listed[0]["properties"]["status"] == "Completed"


def test_the_step_runs_the_parallel_runner_on_the_deployments_model(app, client, auth, ml_auth):
    name = invoke(client, ml_auth, sdk_body())["name"]
    _pass(app, BatchDriver())  # parallel.command_body itself
    step = client.get(f"{JOBS}/{_step(client, auth, name)}", params=API, headers=auth).json()["properties"]
    assert "amlemu_parallel_run.py" in step["command"] and "--entry-script score.py" in step["command"]
    assert step["displayName"] == "batchscoring" and step["computeId"] == f"{WS_PATH}/computes/cpu"
    assert step["inputs"]["model"]["jobInputType"] == "custom_model" and step["inputs"]["UriFolder"]["uri"] == FOLDER
    assert step["outputs"]["score"]["uri"] == \
        f"azureml://datastores/workspaceblobstore/paths/azureml/{_step(client, auth, name)}/score/"
    assert step["environmentVariables"] == {"A": "1"} and step["resources"]["instanceCount"] == 1


def test_a_url_is_scored_from_its_copy_in_the_workspace(app, client, auth, ml_auth, settings):
    mirrored = settings.data_dir / "mirror" / "example.com" / "data" / "rows.csv"
    mirrored.parent.mkdir(parents=True)
    mirrored.write_text("a,b\n1,2\n")
    name = invoke(client, ml_auth, sdk_body("https://example.com/data/rows.csv", "UriFile"))["name"]
    _pass(app)
    copy = fake_command_body.given["input_entry"]["uri"]
    assert copy.startswith("azureml://datastores/") and copy.endswith("/rows.csv")
    assert client.get(f"{JOBS}/{name}", params=API, headers=auth).json()["properties"]["inputs"]["UriFile"]["uri"] == \
        "https://example.com/data/rows.csv"  # the job shows what was asked
    assert_arm_error(client.post(SCORING, headers={**ml_auth, "azureml-model-deployment": "blue"},
                                 json=sdk_body("https://example.com/none.csv", "UriFile")), 400,
                     target="properties.inputData.UriFile.uri")


def test_cancelling_a_batch_job_cancels_its_step(app, client, auth, ml_auth):
    name = invoke(client, ml_auth, sdk_body())["name"]
    _pass(app)
    assert client.post(f"{JOBS}/{name}/cancel", params=API, headers=auth).status_code == 202
    _pass(app)
    children = client.get(f"{HISTORY}/runs/{name}/children", params=API, headers=auth).json()["value"]
    assert [c["status"] for c in children] == ["Canceled"]
    assert client.get(f"{JOBS}/{name}", params=API, headers=auth).json()["properties"]["status"] == "Canceled"
