"""Pipeline jobs (ARM) and their children (RunHistory), in-process through TestClient with no controller: a pipeline
is stored and read back as the SDK sends it, bad ones are refused naming the field with nothing created (no job, no
child), and its steps (made here as the controller makes them) are listed as its children only."""

from datetime import UTC, datetime
from urllib.parse import urlsplit

import pytest

from emulator.controller.scheduling import scheduler
from emulator.domain.ids import WorkspaceRef
from emulator.domain.jobs import artifacts
from emulator.services import parents
from emulator.services.pipeline_driver import PipelineDriver
from tests.service.test_api import API, SUB, WS_PATH, assert_arm_error
from tests.service.test_jobs import CODE_ID, ENV_ID, HISTORY, JOBS, job_names, put_job, ready  # noqa: F401
from tests.service.test_user_registries import DP, PLANE, put_registry, upload

pytestmark = pytest.mark.usefixtures("ready", "components")
COMPONENTS = f"{WS_PATH}/components"
STEP = f"{COMPONENTS}/step/versions/1"
NEEDY = f"{COMPONENTS}/needy/versions/1"


@pytest.fixture
def components(client, auth):
    """`step`: an optional folder in, a count with a default, a folder out; `needy`: a count it must be given."""
    for url, inputs in ((STEP, {"data": {"type": "uri_folder", "optional": True},
                                "n": {"type": "integer", "default": "1"}}),
                        (NEEDY, {"n": {"type": "integer"}})):
        spec = {"type": "command", "command": "python main.py $[[--data ${{inputs.data}}]] --n ${{inputs.n}} "
                "--out ${{outputs.out}}" if "data" in inputs else "python main.py --n ${{inputs.n}} --out ${{outputs.out}}",
                "code": f"azureml:{CODE_ID}", "environment": f"azureml:{ENV_ID}", "inputs": inputs,
                "outputs": {"out": {"type": "uri_folder"}}}
        response = client.put(url, params=API, headers=auth, json={"properties": {"componentSpec": spec}})
        assert response.status_code == 201, response.text


def literal(value: str) -> dict:
    return {"job_input_type": "literal", "value": value}


def step(component: str = STEP, **fields) -> dict:
    return {"type": "command", "componentId": component, **fields}


def pipeline_body(jobs: dict | None = None, **props) -> dict:
    """prep → train (train reads prep's output; its output is the pipeline's `model`)."""
    body = {"jobType": "Pipeline", "experimentName": "exp1", "displayName": "p",
            "inputs": {"n": {"jobInputType": "literal", "value": "3"}},
            "outputs": {"model": {"jobOutputType": "uri_folder"}},
            "settings": {"default_compute": f"{WS_PATH}/computes/cpu", "_source": "YAML.JOB"},
            "jobs": jobs if jobs is not None else {"prep": step(inputs={"n": literal("${{parent.inputs.n}}")}),
                             "train": step(inputs={"data": literal("${{parent.jobs.prep.outputs.out}}")},
                                           outputs={"out": {"type": "literal", "value": "${{parent.outputs.model}}"}})}}
    body.update(props)
    return {"properties": body}


def test_a_pipeline_is_stored_as_sent_and_read_back(client, auth):
    body = put_job(client, auth, "pipe-1", pipeline_body())
    props = body["properties"]
    assert props["status"] == "NotStarted" and props["jobType"] == "Pipeline"
    assert props["jobs"]["train"]["inputs"]["data"]["value"] == "${{parent.jobs.prep.outputs.out}}"
    assert props["settings"]["default_compute"].endswith("/computes/cpu")
    assert client.get(f"{JOBS}/pipe-1", params=API, headers=auth).json() == body
    run = client.get(f"{HISTORY}/runs/pipe-1", params=API, headers=auth).json()
    assert run["runType"] == "azureml.PipelineRun" and run["parentRunId"] is None
    assert job_names(client, auth) == ["pipe-1"]  # the dry run of its steps left nothing


def _cycle() -> dict:
    return {"a": step(inputs={"data": literal("${{parent.jobs.b.outputs.out}}")}),
            "b": step(inputs={"data": literal("${{parent.jobs.a.outputs.out}}")})}


BAD_PIPELINES = [
    (pipeline_body(jobs={"a": step(inputs={"data": literal("${{parent.jobs.nope.outputs.out}}")})},
                   outputs={}), "properties.jobs.a.inputs.data"),
    (pipeline_body(jobs={"a": step(), "b": step(inputs={"data": literal("${{parent.jobs.a.outputs.model}}")})},
                   outputs={}), "properties.jobs.b.inputs.data"),
    (pipeline_body(jobs={"a": step(inputs={"n": literal("${{parent.inputs.missing}}")})}), "properties.jobs.a.inputs.n"),
    (pipeline_body(jobs={"a": step(outputs={"out": {"type": "literal", "value": "${{parent.outputs.nope}}"}})}),
     "properties.jobs.a.outputs.out"),
    (pipeline_body(jobs=_cycle(), outputs={}), "properties.jobs.a"),
    (pipeline_body(jobs={"a": step(f"{COMPONENTS}/step/versions/9")}), "properties.jobs.a.componentId"),
    (pipeline_body(jobs={"a": step("azureml:missing@latest")}), "properties.jobs.a.componentId"),
    (pipeline_body(jobs={"a": step(inputs={"zzz": literal("1")})}), "properties.jobs.a.inputs.zzz"),
    (pipeline_body(jobs={"a": step(NEEDY)}), "properties.jobs.a.inputs.n"),
    (pipeline_body(jobs={"a": {**step(), "type": "parallel"}}), "properties.jobs.a.type"),
    (pipeline_body(jobs={"a": step(computeId=f"{WS_PATH}/computes/nope")}), "properties.jobs.a.computeId"),
    (pipeline_body(jobs={"a": step()}, settings={"default_compute": f"{WS_PATH}/computes/nope"}),
     "properties.settings.default_compute"),
    (pipeline_body(jobs={"a": step()}, settings={"continue_on_step_failure": "yes"}),
     "properties.settings.continue_on_step_failure"),
    (pipeline_body(jobs={}), "properties.jobs"),
    # escapes tried: a step's output path climbing out of its datastore, with or without ${{name}}
    (pipeline_body(jobs={"a": step(outputs={"out": {"job_output_type": "uri_folder",
                                                    "uri": "azureml://datastores/workspaceblobstore/paths/../../x/"}})}),
     "properties.jobs.a.outputs.out.uri"),
    (pipeline_body(jobs={"a": step(outputs={"out": {"job_output_type": "uri_folder",
                                                    "uri": "azureml://datastores/workspaceblobstore/paths/${{name}}/../../../x/"}})}),
     "properties.jobs.a.outputs.out.uri"),
    (pipeline_body(jobs={"1a": step()}), "properties.jobs.1a"),
]


@pytest.mark.parametrize(("body", "target"), BAD_PIPELINES)
def test_bad_pipelines_are_refused_naming_the_field_and_change_nothing(client, auth, body, target):
    assert_arm_error(client.put(f"{JOBS}/bad-pipe", params=API, headers=auth, json=body), 400, target=target)
    assert_arm_error(client.get(f"{JOBS}/bad-pipe", params=API, headers=auth), 404)
    assert job_names(client, auth, listViewType="All") == []


def _controller_pass(app) -> None:
    """What the controller's parents step does, once."""
    store, now = app.state.context.store, datetime.now(UTC)
    with store.transaction() as repo:
        for parent in repo.parents_in(("NotStarted", "Running", "CancelRequested")):
            parents.drive(repo, parent, PipelineDriver(), {}, now, None)


def test_steps_are_the_pipelines_children_and_cancel_with_it(app, client, auth):
    put_job(client, auth, "pipe-1", pipeline_body())
    _controller_pass(app)
    children = client.get(f"{HISTORY}/runs/pipe-1/children", params=API, headers=auth).json()["value"]
    assert [(c["displayName"], c["status"], c["parentRunId"]) for c in children] == [("prep", "NotStarted", "pipe-1")]
    assert job_names(client, auth) == ["pipe-1"]  # steps are not listed among the jobs
    child = client.get(f"{JOBS}/{children[0]['runId']}", params=API, headers=auth).json()["properties"]
    assert child["inputs"]["n"] == {"jobInputType": "literal", "value": "3"}
    assert child["properties"]["azureml.nodeid"] == "prep" and "amlemuReuseKey" not in child
    assert client.post(f"{JOBS}/pipe-1/cancel", params=API, headers=auth).status_code == 202
    statuses = {c["runId"]: c["status"] for c in
                client.get(f"{HISTORY}/runs/pipe-1/children", params=API, headers=auth).json()["value"]}
    assert set(statuses.values()) == {"Canceled"}
    _controller_pass(app)
    assert client.get(f"{JOBS}/pipe-1", params=API, headers=auth).json()["properties"]["status"] == "Canceled"


def test_the_pipelines_web_view_shows_its_log(client, auth, settings):
    body = put_job(client, auth, "pipe-1", pipeline_body())
    log = settings.data_dir / artifacts.directory(WorkspaceRef(SUB, "amlemu", "amlemu"), "pipe-1") / \
        artifacts.PARENT_LOGS["Pipeline"]
    log.parent.mkdir(parents=True)
    log.write_text("[2026-01-01 12:00:00Z] Submitting 1 runs, first five are: prep:x\n")
    link = urlsplit(body["properties"]["services"]["Studio"]["endpoint"])
    page = client.get(f"{link.path}?{link.query}")  # no token: as a browser opens it
    assert page.status_code == 200 and "Submitting 1 runs" in page.text and "pipe-1" in page.text


def test_a_step_runs_a_registrys_component_with_the_registrys_code(app, client, auth, settings):
    put_registry(client, auth)
    code = "azureml://registries/shared-reg/codes/src/versions/1"
    assert client.put(f"{PLANE}/codes/src/versions/1", params=DP, headers=auth,
                      json={"properties": {"codeUri": upload(settings, "main.py", "print('hi')")}}).status_code == 201
    spec = {"type": "command", "command": "python main.py --out ${{outputs.out}}", "code": code,
            "environment": "azureml://registries/azureml/environments/sklearn-1.5/labels/latest",
            "outputs": {"out": {"type": "uri_folder"}}}
    made = client.put(f"{PLANE}/components/shared_step/versions/1", params=DP, headers=auth,
                      json={"properties": {"componentSpec": spec}})
    assert made.status_code == 201, made.text
    shared = "azureml://registries/shared-reg/components/shared_step/labels/latest"
    put_job(client, auth, "pipe-reg", pipeline_body(jobs={"a": step(shared)}, inputs={}, outputs={}))
    _controller_pass(app)
    child = client.get(f"{HISTORY}/runs/pipe-reg/children", params=API, headers=auth).json()["value"][0]["runId"]
    with app.state.context.store.transaction() as repo:
        job = repo.job(f"{WS_PATH}/jobs/{child}".lower())
        assert job.body["codeId"] == code
        where = scheduler.code_dir(repo, WorkspaceRef(SUB, "amlemu", "amlemu"), job)
    assert (settings.data_dir / where / "main.py").read_text() == "print('hi')"  # the node copies it from there
