"""Job schedules (ARM) through TestClient: written, read, listed by view, disabled, deleted; bad ones refused naming
the field and changing nothing (no schedule, no job); the jobs a firing makes found by jobs.list's filters. No
controller runs here: a firing is the controller's step called on the app's store."""

from datetime import timedelta

import pytest

from emulator.services import schedules as schedule_service
from tests.service.test_api import API, WS_PATH, assert_arm_error
from tests.service.test_jobs import JOBS, job_body, job_names, put_job, ready  # noqa: F401 (a fixture)

SCHEDULES = f"{WS_PATH}/schedules"
CRON = {"triggerType": "Cron", "expression": "*/5 * * * *", "timeZone": "W. Europe Standard Time"}


def schedule(trigger: dict | None = None, definition: dict | None = None, **props) -> dict:
    return {"properties": {"displayName": "nightly", "isEnabled": True, "trigger": trigger or CRON,
                           "action": {"actionType": "CreateJob",
                                      "jobDefinition": definition or job_body()["properties"]}, **props}}


def put(client, auth, name: str, body: dict, expected: int = 201):
    response = client.put(f"{SCHEDULES}/{name}", params=API, headers=auth, json=body)
    assert response.status_code == expected, response.text
    return response


def names(client, auth, **params) -> list[str]:
    response = client.get(SCHEDULES, params={**API, **params}, headers=auth)
    assert response.status_code == 200, response.text
    return [s["name"] for s in response.json()["value"]]


def test_write_read_list_disable_delete(client, auth, ready):  # noqa: F811
    made = put(client, auth, "nightly", schedule())
    assert made.headers["Azure-AsyncOperation"] and made.headers["Retry-After"] == "1"
    body = made.json()
    assert body["id"] == f"{SCHEDULES}/nightly" and body["type"].endswith("/workspaces/schedules")
    props = body["properties"]
    assert props["provisioningState"] == "Succeeded" and props["isEnabled"] is True
    assert props["trigger"] == CRON and props["action"]["jobDefinition"]["command"].startswith("python main.py")
    status = client.get(made.headers["Azure-AsyncOperation"], headers=auth)
    assert status.json()["status"] == "Succeeded"
    assert client.get(f"{SCHEDULES}/nightly", params=API, headers=auth).json() == body
    put(client, auth, "off", schedule(isEnabled=False))
    assert names(client, auth) == ["nightly"]
    assert names(client, auth, listViewType="DisabledOnly") == ["off"]
    assert names(client, auth, listViewType="All") == ["nightly", "off"]
    assert put(client, auth, "nightly", schedule(isEnabled=False), 200).json()["properties"]["isEnabled"] is False
    assert names(client, auth) == []
    deleted = client.delete(f"{SCHEDULES}/nightly", params=API, headers=auth)
    assert deleted.status_code == 202 and deleted.headers["Location"]
    assert client.delete(f"{SCHEDULES}/nightly", params=API, headers=auth).status_code == 204
    assert_arm_error(client.get(f"{SCHEDULES}/nightly", params=API, headers=auth), 404, target="name")


def test_a_job_named_by_its_id_is_what_each_firing_copies(client, auth, ready):  # noqa: F811
    put_job(client, auth, "template", job_body())
    source = f"azureml:{JOBS}/template"
    props = put(client, auth, "copies", schedule(definition={"jobType": "Pipeline", "sourceJobId": source,
                                                             "experimentName": ""})).json()["properties"]
    assert props["action"]["jobDefinition"]["sourceJobId"] == source


PIPELINE = {"jobType": "Pipeline", "experimentName": ""}
BAD = [
    (schedule({**CRON, "expression": "61 * * * *"}), "properties.trigger.expression"),
    (schedule({**CRON, "timeZone": "Atlantis Standard Time"}), "properties.trigger.timeZone"),
    (schedule({"triggerType": "Recurrence", "frequency": "Fortnight", "interval": 1}), "properties.trigger.frequency"),
    (schedule(definition={**PIPELINE, "sourceJobId": "azureml:no-such-job"}),
     "properties.action.jobDefinition.sourceJobId"),
    (schedule(definition=job_body(computeId=f"{WS_PATH}/computes/nope")["properties"]),
     "properties.action.jobDefinition.computeId"),
    (schedule(definition=job_body(environmentId=f"{WS_PATH}/environments/nope/versions/1")["properties"]),
     "properties.action.jobDefinition.environmentId"),
    ({"properties": {"trigger": CRON, "action": {"actionType": "ImportData"}}}, "properties.action.actionType"),
]


@pytest.mark.parametrize(("body", "target"), BAD)
def test_bad_schedules_are_refused_naming_the_field_and_change_nothing(client, auth, ready, body, target):  # noqa: F811
    put(client, auth, "kept", schedule())
    before = client.get(f"{SCHEDULES}/kept", params=API, headers=auth).json()
    for name in ("fresh", "kept"):  # neither a new schedule nor an update of one
        assert_arm_error(client.put(f"{SCHEDULES}/{name}", params=API, headers=auth, json=body), 400, target=target)
    assert names(client, auth, listViewType="All") == ["kept"]
    assert client.get(f"{SCHEDULES}/kept", params=API, headers=auth).json() == before
    assert job_names(client, auth, listViewType="All") == []  # the job tried at write time was rolled back


def test_a_bad_schedule_name_and_another_workspace(client, auth, ready):  # noqa: F811
    assert_arm_error(client.put(f"{SCHEDULES}/-bad", params=API, headers=auth, json=schedule()), 400, target="name")
    other = SCHEDULES.replace("/workspaces/amlemu/", "/workspaces/nowhere/")
    assert_arm_error(client.put(f"{other}/s", params=API, headers=auth, json=schedule()), 404)


def test_the_jobs_a_schedule_made_are_listed_by_its_name(client, auth, ready, app):  # noqa: F811
    put_job(client, auth, "by-hand", job_body())
    put(client, auth, "every-minute", schedule({"triggerType": "Cron", "expression": "* * * * *"}))
    store, clock = app.state.context.store, app.state.context.clock
    with store.transaction() as repo:  # the controller's step, 2 minutes on (time scale 1): 2 whole minutes passed
        fired = schedule_service.fire_due(repo, clock() + timedelta(minutes=2), 1.0, None)
    assert len(fired) == 2 and all(f.job for f in fired)
    assert sorted(job_names(client, auth, scheduleId="every-minute")) == sorted(f.job for f in fired)
    assert job_names(client, auth, scheduled="false") == ["by-hand"]
    assert len(job_names(client, auth, scheduled="true")) == 2
    client.delete(f"{SCHEDULES}/every-5", params=API, headers=auth)
    assert len(job_names(client, auth)) == 3  # deleting a schedule leaves its jobs
