"""Compute instances through the api alone (no controller): what a PUT stores and shows, the actions
(start, stop, restart, delete, updateIdleShutdownSetting) against the state machine, and bad input refused
with the field named and nothing changed. The controller's part is stood in for by writing the record as it
would (`settle`)."""

from datetime import UTC, datetime

import pytest

from emulator.services import instances
from tests.service.test_api import API, COMPUTES, OP_URL, assert_arm_error, list_computes, put_cluster

KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGXx0dxTN1cPtW6Hbn5Ay6fA1ec5mVUJ3GhC3Uj7fmsd someone@laptop"


def ci(**inner) -> dict:
    return {"properties": {"computeType": "ComputeInstance", "description": "a workstation",
                           "properties": {"vmSize": "Standard_DS3_v2", **inner}}}


def put_ci(client, auth, name: str = "my-ci", body: dict | None = None, expected: int = 201):
    response = client.put(f"{COMPUTES}/{name}", params=API, json=body or ci(), headers=auth)
    assert response.status_code == expected, response.text
    return response


def inner(client, auth, name: str = "my-ci") -> dict:
    response = client.get(f"{COMPUTES}/{name}", params=API, headers=auth)
    assert response.status_code == 200, response.text
    return response.json()["properties"]["properties"]


def act(client, auth, action: str, name: str = "my-ci"):
    return client.post(f"{COMPUTES}/{name}/{action}", params=API, headers=auth)


def settle(app, name: str = "my-ci") -> None:
    """Finish the operation in progress, as the controller does once the containers are there (or gone)."""
    from emulator.domain.compute import instance

    now = datetime.now(UTC)
    with app.state.context.store.transaction() as repo:
        row = repo.compute(f"{COMPUTES}/{name}")
        operation = instance.LastOperation.from_row(row.instance["lastOperation"])
        state, done = instance.finish(operation, True, now)
        row.instance = {**row.instance, "state": state.value, "lastOperation": done.to_row()}
        row.provisioning_state = "Succeeded"


def test_an_instance_is_created_then_follows_the_state_machine(client, app, auth):
    created = put_ci(client, auth, body=ci(idleTimeBeforeShutdown="PT30M"))
    assert OP_URL.match(created.headers["Azure-AsyncOperation"])
    props = created.json()["properties"]
    assert props["computeType"] == "ComputeInstance" and props["provisioningState"] == "Creating"
    assert props["properties"]["state"] == "Creating"
    assert props["properties"]["lastOperation"]["operationName"] == "Create"
    assert props["properties"]["lastOperation"]["operationStatus"] == "InProgress"
    assert props["properties"]["lastOperation"]["operationTrigger"] == "User"
    assert props["properties"]["idleTimeBeforeShutdown"] == "PT30M"
    assert props["properties"]["sshSettings"]["adminUserName"] == "azureuser"
    assert_arm_error(act(client, auth, "start"), 409)  # still being created

    settle(app)
    assert inner(client, auth)["state"] == "Running"
    assert_arm_error(act(client, auth, "start"), 409)  # running already
    stopping = act(client, auth, "stop")
    assert stopping.status_code == 202 and OP_URL.match(stopping.headers["Azure-AsyncOperation"])
    assert inner(client, auth)["state"] == "Stopping"
    assert_arm_error(act(client, auth, "restart"), 409)  # in the middle of a stop
    settle(app)
    assert inner(client, auth)["state"] == "Stopped"
    assert "Stopped" in assert_arm_error(act(client, auth, "stop"), 409)["message"]
    assert_arm_error(act(client, auth, "restart"), 409)
    assert act(client, auth, "start").status_code == 202 and inner(client, auth)["state"] == "Starting"
    settle(app)
    assert act(client, auth, "restart").status_code == 202 and inner(client, auth)["state"] == "Restarting"
    settle(app)
    last = inner(client, auth)["lastOperation"]
    assert (last["operationName"], last["operationStatus"]) == ("Restart", "Succeeded")

    deleted = client.delete(f"{COMPUTES}/my-ci", params=API, headers=auth)
    assert deleted.status_code == 202 and inner(client, auth)["state"] == "Deleting"


def test_an_update_may_change_schedules_and_idle_time_only(client, app, auth):
    put_ci(client, auth)
    settle(app)
    schedule = {"computeStartStop": [{"status": "Enabled", "action": "Stop", "triggerType": "Cron",
                                      "cron": {"expression": "0 18 * * *", "timeZone": "UTC"}}]}
    updated = put_ci(client, auth, body=ci(schedules=schedule, idleTimeBeforeShutdown="PT1H"), expected=200)
    # Nothing for the controller to do: the SDK's poller ends at once and the instance stays Succeeded.
    assert client.get(updated.headers["Azure-AsyncOperation"], headers=auth).json()["status"] == "Succeeded"
    assert updated.json()["properties"]["provisioningState"] == "Succeeded"
    props = inner(client, auth)
    assert props["idleTimeBeforeShutdown"] == "PT1H"
    assert props["schedules"]["computeStartStop"][0]["cron"]["expression"] == "0 18 * * *"
    assert props["state"] == "Running"  # an update is no restart
    assert assert_arm_error(put_ci(client, auth, body=ci(vmSize="Standard_DS4_v2"), expected=400), 400)["target"] \
        == "properties.properties.vmSize"
    assert inner(client, auth)["vmSize"] == "Standard_DS3_v2"

    response = client.post(f"{COMPUTES}/my-ci/updateIdleShutdownSetting", params=API, headers=auth,
                           json={"idleTimeBeforeShutdown": "PT20M"})
    assert response.status_code == 200, response.text
    assert inner(client, auth)["idleTimeBeforeShutdown"] == "PT20M"
    assert_arm_error(client.post(f"{COMPUTES}/my-ci/updateIdleShutdownSetting", params=API, headers=auth,
                                 json={"idleTimeBeforeShutdown": "PT5M"}), 400)
    assert inner(client, auth)["idleTimeBeforeShutdown"] == "PT20M"


def test_ssh_settings_are_kept_and_shown(client, auth):
    put_ci(client, auth, body=ci(sshSettings={"sshPublicAccess": "Enabled", "adminPublicKey": KEY}))
    ssh = inner(client, auth)["sshSettings"]
    assert ssh["sshPublicAccess"] == "Enabled" and ssh["adminPublicKey"] == KEY and ssh["adminUserName"] == "azureuser"


def test_cluster_actions_are_refused(client, auth):
    put_cluster(client, auth, "cpu")
    refused = assert_arm_error(act(client, auth, "start", "cpu"), 400, target="computeName")
    assert "compute instances" in refused["message"]


BAD = [
    ("low priority", ci(vmPriority="LowPriority"), "vmPriority"),
    ("unknown size", ci(vmSize="Standard_Nope"), "vmSize"),
    ("idle time too short", ci(idleTimeBeforeShutdown="PT5M"), "idleTimeBeforeShutdown"),
    ("idle time too long", ci(idleTimeBeforeShutdown="P4D"), "idleTimeBeforeShutdown"),
    ("ssh without a key", ci(sshSettings={"sshPublicAccess": "Enabled"}), "adminPublicKey"),
    ("ssh with a bad key", ci(sshSettings={"sshPublicAccess": "Enabled", "adminPublicKey": "ssh-rsa nonsense"}),
     "adminPublicKey"),
    ("bad cron", ci(schedules={"computeStartStop": [{"status": "Enabled", "action": "Stop", "triggerType": "Cron",
                                                     "cron": {"expression": "0 25 * * *", "timeZone": "UTC"}}]}),
     "expression"),
    ("bad time zone", ci(schedules={"computeStartStop": [{"status": "Enabled", "action": "Start",
                                                          "triggerType": "Cron",
                                                          "cron": {"expression": "0 8 * * *", "timeZone": "Mars/Base"}}]}),
     "timeZone"),
    ("five schedules", ci(schedules={"computeStartStop": [
        {"status": "Enabled", "action": "Stop", "triggerType": "Cron",
         "cron": {"expression": f"0 {h} * * *", "timeZone": "UTC"}} for h in range(5)]}), "computeStartStop"),
]


@pytest.mark.parametrize(("case", "body", "field"), BAD, ids=[c[0] for c in BAD])
def test_bad_instances_change_nothing(shared, case, body, field):
    before = list_computes(shared.client, shared.auth)
    response = shared.client.put(f"{COMPUTES}/bad-ci", params=API, json=body, headers=shared.auth)
    error = assert_arm_error(response, 400)
    assert field in error["message"] or field in (error.get("target") or ""), error
    assert list_computes(shared.client, shared.auth) == before


def test_the_record_never_shows_its_token_outside_the_application_urls(client, app, auth):
    put_ci(client, auth)
    with app.state.context.store.transaction() as repo:
        row = repo.compute(f"{COMPUTES}/my-ci")
        token = row.instance["token"]
        row.instance = {**row.instance, "ports": {str(instances.JUPYTER_PORT): 49200}}
    props = inner(client, auth)
    assert [a["endpointUri"] for a in props["applications"]] == [
        f"http://127.0.0.1:49200/tree?token={token}", f"http://127.0.0.1:49200/lab?token={token}"]
    assert str(props).count(token) == 2
