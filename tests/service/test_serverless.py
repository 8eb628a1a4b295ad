"""Serverless compute: a job that names no compute runs on a cluster the emulator keeps for its workspace, one per
VM size and tier, which no compute route shows. No controller runs here: what the api stores is checked."""

import pytest

from emulator.store.tables import Compute
from tests.service.test_api import API, WS_PATH, assert_arm_error
from tests.service.test_jobs import JOBS, job_body, put_job, ready  # noqa: F401 (`ready`: a fixture)

COMPUTES = f"{WS_PATH}/computes"
pytestmark = pytest.mark.usefixtures("ready")  # a cluster, a code and an environment version


def _stored_compute(app, job_name: str) -> Compute:
    store = app.state.context.store
    with store.transaction() as repo:
        job = repo.job(f"{WS_PATH}/jobs/{job_name}".lower())
        return repo.compute(job.compute_key)


def test_a_job_without_compute_runs_on_hidden_dedicated_capacity_of_the_default_size(app, client, auth):
    body = put_job(client, auth, "hello-serverless", job_body(computeId=...))
    assert body["properties"].get("computeId") is None  # as Azure shows a serverless job
    compute = _stored_compute(app, "hello-serverless")
    inner = compute.body["properties"]["properties"]
    assert (inner["vmSize"], inner["vmPriority"]) == ("Standard_DS3_v2", "Dedicated")
    assert inner["scaleSettings"]["minNodeCount"] == 0 and inner["scaleSettings"]["maxNodeCount"] == 6  # 24 vCPUs / 4
    listed = client.get(COMPUTES, params=API, headers=auth).json()["value"]
    assert [c["name"] for c in listed] == ["cpu"]  # only the user's own cluster
    assert_arm_error(client.get(f"{COMPUTES}/{compute.name}", params=API, headers=auth), 404)
    assert client.delete(f"{COMPUTES}/{compute.name}", params=API, headers=auth).status_code == 204  # none such
    assert _stored_compute(app, "hello-serverless").provisioning_state == "Succeeded"  # untouched


def test_spot_tier_and_instance_type_choose_low_priority_capacity_shared_by_jobs_alike(app, client, auth):
    spot = job_body(computeId=..., queueSettings={"jobTier": "Spot"},
                    resources={"instanceType": "Standard_D2_v3", "instanceCount": 2})
    put_job(client, auth, "spot-1", spot)
    put_job(client, auth, "spot-2", spot)
    put_job(client, auth, "standard-1", job_body(computeId=..., queueSettings={"jobTier": "Standard"},
                                                   resources={"instanceType": "Standard_D2_v3"}))
    first, second = _stored_compute(app, "spot-1"), _stored_compute(app, "spot-2")
    standard = _stored_compute(app, "standard-1")
    assert first.key == second.key != standard.key
    assert first.body["properties"]["properties"]["vmPriority"] == "LowPriority"
    assert standard.body["properties"]["properties"]["vmPriority"] == "Dedicated"
    assert first.body["properties"]["properties"]["vmSize"] == "Standard_D2_v3"


def test_a_refused_serverless_job_leaves_no_capacity_behind(app, client, auth):
    bad = job_body(computeId=..., environmentId=f"{WS_PATH}/environments/nope/versions/1")
    assert_arm_error(client.put(f"{JOBS}/refused", params=API, headers=auth, json=bad), 400,
                     target="properties.environmentId")
    with app.state.context.store.transaction() as repo:
        assert [c.name for c in repo.computes()] == ["cpu"]


def test_the_emulators_preempt_control_reaches_a_spot_jobs_hidden_cluster(app, client, auth):
    put_job(client, auth, "spot", job_body(computeId=..., queueSettings={"jobTier": "Spot"},
                                            resources={"instanceType": "Standard_D2_v3"}))
    name = _stored_compute(app, "spot").name
    assert name == "serverless.lowpriority.standard_d2_v3"
    response = client.post(f"/_emulator{COMPUTES}/{name}/preempt", params=API, headers=auth)
    assert_arm_error(response, 409, target="computeName")  # found, but it has no node up yet
    assert "no node to preempt" in response.json()["error"]["message"]
