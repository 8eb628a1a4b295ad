"""Sweep jobs (ARM) and their children (RunHistory), in-process through TestClient with no controller: a sweep is
stored and read back as the SDK sends it, bad ones are refused naming the field with nothing created, its trials
(made here as the controller makes them) are listed as its children only, and cancelling it cancels them."""

from datetime import UTC, datetime
from urllib.parse import urlsplit

import pytest

from emulator.domain.ids import WorkspaceRef
from emulator.domain.jobs import artifacts
from emulator.services import parents
from emulator.services.sweep_driver import SweepDriver
from tests.service.test_api import API, SUB, WS_PATH, assert_arm_error
from tests.service.test_jobs import CODE_ID, ENV_ID, HISTORY, JOBS, job_names, put_job, ready  # noqa: F401

pytestmark = pytest.mark.usefixtures("ready")
SPACE = {"C": ["uniform", [0.1, 10]], "kernel": ["choice", [["linear", "rbf"]]]}


def sweep_body(**props) -> dict:
    body = {"jobType": "Sweep", "experimentName": "exp1", "searchSpace": SPACE,
            "samplingAlgorithm": {"samplingAlgorithmType": "Random", "seed": 3},
            "objective": {"goal": "maximize", "primaryMetric": "accuracy"},
            "limits": {"jobLimitsType": "Sweep", "maxTotalTrials": 3, "maxConcurrentTrials": 2, "timeout": "PT10M"},
            "earlyTermination": {"policyType": "Bandit", "slackFactor": 0.1, "evaluationInterval": 1},
            "computeId": f"{WS_PATH}/computes/cpu", "inputs": {}, "outputs": {}, "isArchived": False,
            "trial": {"command": "python main.py --C ${{search_space.C}} --k ${{search_space.kernel}}",
                      "codeId": CODE_ID, "environmentId": ENV_ID}}
    body.update(props)
    return {"properties": {k: v for k, v in body.items() if v is not ...}}


def test_a_sweep_is_stored_as_sent_and_read_back(client, auth):
    body = put_job(client, auth, "sweep-1", sweep_body())
    props = body["properties"]
    assert props["status"] == "NotStarted" and props["jobType"] == "Sweep"
    assert props["searchSpace"] == SPACE and props["trial"]["command"].endswith("${{search_space.kernel}}")
    assert client.get(f"{JOBS}/sweep-1", params=API, headers=auth).json() == body
    assert job_names(client, auth) == ["sweep-1"]
    children = client.get(f"{HISTORY}/runs/sweep-1/children", params=API, headers=auth)
    assert children.status_code == 200 and children.json()["value"] == []
    run = client.get(f"{HISTORY}/runs/sweep-1", params=API, headers=auth).json()
    assert run["runType"] == "hyperdrive" and run["parentRunId"] is None


BAD_SWEEPS = [
    (sweep_body(searchSpace={"lr": ["gaussian", [0, 1]]}), "properties.searchSpace.lr"),
    (sweep_body(searchSpace={"C": ["uniform", [5, 1]]}), "properties.searchSpace.C"),
    (sweep_body(objective={"goal": "maximize"}), "properties.objective.primaryMetric"),
    (sweep_body(samplingAlgorithm={"samplingAlgorithmType": "Hunch"}),
     "properties.samplingAlgorithm.samplingAlgorithmType"),
    (sweep_body(samplingAlgorithm={"samplingAlgorithmType": "Grid"}), "properties.searchSpace.C"),
    (sweep_body(earlyTermination={"policyType": "Lucky"}), "properties.earlyTermination.policyType"),
    (sweep_body(limits={"maxTotalTrials": 5000}), "properties.limits.maxTotalTrials"),
    (sweep_body(limits={"maxConcurrentTrials": 0}), "properties.limits.maxConcurrentTrials"),
    # what a trial needs is checked through the command-job path, said of the sweep's fields
    (sweep_body(computeId=f"{WS_PATH}/computes/nope"), "properties.computeId"),
    (sweep_body(trial={"command": "python main.py", "environmentId": f"{WS_PATH}/environments/no/versions/1"}),
     "properties.trial.environmentId"),
    (sweep_body(trial={"command": "python main.py ${{inputs.missing}}", "environmentId": ENV_ID}),
     "properties.trial.command"),
]


@pytest.mark.parametrize(("body", "target"), BAD_SWEEPS)
def test_bad_sweeps_are_refused_naming_the_field_and_change_nothing(client, auth, body, target):
    assert_arm_error(client.put(f"{JOBS}/bad-sweep", params=API, headers=auth, json=body), 400, target=target)
    assert_arm_error(client.get(f"{JOBS}/bad-sweep", params=API, headers=auth), 404)
    assert job_names(client, auth, listViewType="All") == []


def _controller_pass(app) -> None:
    """What the controller's parents step does, once (no MLflow: no metric logged)."""
    store, now = app.state.context.store, datetime.now(UTC)
    with store.transaction() as repo:
        for parent in repo.parents_in(("NotStarted", "Running", "CancelRequested")):
            parents.drive(repo, parent, SweepDriver(), {}, now, None)


def test_trials_are_the_sweeps_children_and_cancel_with_it(app, client, auth):
    put_job(client, auth, "sweep-1", sweep_body())
    _controller_pass(app)
    children = client.get(f"{HISTORY}/runs/sweep-1/children", params=API, headers=auth).json()["value"]
    assert [(c["runId"], c["parentRunId"], c["status"], c["compute"]["target"]) for c in children] == [
        ("sweep-1_0", "sweep-1", "NotStarted", "cpu"), ("sweep-1_1", "sweep-1", "NotStarted", "cpu")]
    top = client.get(f"{HISTORY}/runs/sweep-1/children", params={**API, "$top": 1}, headers=auth).json()["value"]
    assert [c["runId"] for c in top] == ["sweep-1_0"]
    trial = client.get(f"{JOBS}/sweep-1_0", params=API, headers=auth).json()["properties"]
    assert trial["jobType"] == "Command" and trial["inputs"]["kernel"]["jobInputType"] == "literal"
    assert job_names(client, auth) == ["sweep-1"]  # trials are not listed among the jobs
    assert client.get(f"{JOBS}/sweep-1", params=API, headers=auth).json()["properties"]["status"] == "Running"
    assert client.post(f"{JOBS}/sweep-1/cancel", params=API, headers=auth).status_code == 202
    statuses = [c["status"] for c in client.get(f"{HISTORY}/runs/sweep-1/children", params=API,
                                                headers=auth).json()["value"]]
    assert statuses == ["Canceled", "Canceled"]  # neither had started: at once
    _controller_pass(app)
    assert client.get(f"{JOBS}/sweep-1", params=API, headers=auth).json()["properties"]["status"] == "Canceled"
    assert client.post(f"{JOBS}/sweep-1/cancel", params=API, headers=auth).status_code == 200


def test_the_sweeps_web_view_shows_its_log(client, auth, settings):
    body = put_job(client, auth, "sweep-1", sweep_body())
    log = settings.data_dir / artifacts.directory(WorkspaceRef(SUB, "amlemu", "amlemu"), "sweep-1") / \
        artifacts.PARENT_LOGS["Sweep"]
    log.parent.mkdir(parents=True)
    log.write_text("[2026-01-01T12:00:00.000000Z][SCHEDULER][INFO]Scheduling job, id='sweep-1_0'\n")
    link = urlsplit(body["properties"]["services"]["Studio"]["endpoint"])
    page = client.get(f"{link.path}?{link.query}")  # no token: as a browser opens it
    assert page.status_code == 200 and "Scheduling job" in page.text and "sweep-1" in page.text
