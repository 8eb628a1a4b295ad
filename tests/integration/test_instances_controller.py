"""Compute instances through the real controller loop: the workstation and agent containers, the home volume
across stop and start, jobs on the instance, idle shutdown, a schedule, delete; with the time scale at 0.01
(15 minutes of idle shutdown are 9 s)."""

import json

import httpx
import pytest

from emulator.domain.assets import images
from emulator.domain.compute.instance import LastOperation
from emulator.services import computes, instances
from tests import gate
from tests.integration.lab import Lab, now

NAME = "my-ci"
IDLE = "PT15M"  # Azure's shortest idle shutdown


@pytest.fixture
def time_scale() -> float:
    return 0.01


@pytest.fixture(autouse=True)
def _instance_image(docker_client):
    try:
        docker_client.images.get(images.INSTANCE_IMAGE)
    except Exception:  # noqa: BLE001
        pytest.skip("the compute-instance image is missing; build it with `amlemu build`")


@pytest.fixture(autouse=True)
def _no_volume_left(runtime, settings):
    yield
    for container in runtime.list({"amlemu.stack": settings.stack}):  # before the stack's own sweep: the homes go
        runtime.remove(container.id)
    for volume in runtime.volumes({"amlemu.stack": settings.stack}):
        runtime.remove_volume(volume)


def create(lab: Lab, **inner) -> None:
    body = {"properties": {"computeType": "ComputeInstance", "properties": {"vmSize": "Standard_DS3_v2", **inner}}}
    with lab.store.transaction() as repo:
        computes.put(repo, lab.ref, repo.workspace(lab.ref.key), NAME, body, now())


def act(lab: Lab, action: str) -> None:
    with lab.store.transaction() as repo:
        computes.act(repo, lab.ref, NAME, action, now())


def record(lab: Lab) -> dict:
    with lab.store.transaction() as repo:
        row = repo.compute(lab.ref.child_id("computes", NAME))
        return row.instance if row else None


def wait_state(lab: Lab, state: str, timeout: float = 120.0) -> dict:
    return lab.wait(lambda: (r := record(lab)) and r["state"] == state and r, timeout, f"instance {state}")


def containers(lab: Lab, role: str) -> list:
    return [c for c in lab.runtime.list({"amlemu.stack": lab.settings.stack, "amlemu.role": role}) if c.running]


def shell(lab: Lab, command: str) -> str:
    (workstation,) = containers(lab, "instance")
    code, output = lab.runtime.exec(workstation.id, ["bash", "-c", command])
    assert code == 0, output
    return output


def test_an_instance_keeps_its_home_across_stop_and_start_and_goes_with_delete(lab):
    create(lab)
    running = wait_state(lab, "Running")
    assert LastOperation.from_row(running["lastOperation"]).status == "Succeeded"
    assert len(containers(lab, "instance")) == len(containers(lab, "agent")) == 1
    assert shell(lab, "whoami; test -e /var/run/docker.sock && echo socket || echo no-socket").split() == [
        "azureuser", "no-socket"]
    shell(lab, "echo kept > ~/notes.txt")
    port = running["ports"][str(instances.JUPYTER_PORT)]
    assert httpx.get(f"http://127.0.0.1:{port}/api/status",
                     headers={"Authorization": f"token {running['token']}"}).status_code == 200

    act(lab, "Stop")
    assert record(lab)["state"] == "Stopping"
    wait_state(lab, "Stopped")
    assert not containers(lab, "instance") and not containers(lab, "agent")
    act(lab, "Start")
    wait_state(lab, "Running")
    assert shell(lab, "cat ~/notes.txt").strip() == "kept"

    with lab.store.transaction() as repo:
        computes.delete(repo, lab.ref, NAME, now())
    lab.wait(lambda: record(lab) is None, 60, "the instance to be deleted")
    assert not lab.runtime.list({"amlemu.stack": lab.settings.stack, "amlemu.role": "instance"})
    assert not lab.runtime.volumes({"amlemu.stack": lab.settings.stack})


def test_jobs_run_on_the_instance_one_at_a_time_first_come_first_served(lab):
    create(lab)
    wait_state(lab, "Running")
    lab.submit("on-ci-1", f"echo first; {gate.WAIT}", compute=NAME)
    lab.submit("on-ci-2", "echo second", compute=NAME)
    lab.wait_status("on-ci-1", "Running")
    lab.wait(lambda: record(lab)["state"] == "JobRunning", 30, "JobRunning")
    assert lab.job("on-ci-2").status == "Queued"  # one slot: the second waits its turn
    gate.release(lab.artifacts("on-ci-1") / "outputs")
    first, second = lab.wait_status("on-ci-1", "Completed"), lab.wait_status("on-ci-2", "Completed")
    assert first.started_at <= second.started_at and first.ended_at <= second.started_at  # one slot: in turn
    assert "first" in (lab.artifacts("on-ci-1") / "user_logs" / "std_log.txt").read_text()
    wait_state(lab, "Running", 30)


def test_an_idle_instance_shuts_down_but_not_while_a_terminal_is_open(lab):
    create(lab, idleTimeBeforeShutdown=IDLE)
    running = wait_state(lab, "Running")
    base = f"http://127.0.0.1:{running['ports'][str(instances.JUPYTER_PORT)]}"
    auth = {"Authorization": f"token {running['token']}"}
    terminal = httpx.post(f"{base}/api/terminals", headers=auth)
    assert terminal.status_code == 200, terminal.text
    # In use: the probes see the terminal and the idle clock does not run, past the (scaled) 9 s.
    assert json.loads(shell(lab, "amlemu-activity"))["terminals"] == 1
    opened, key = now(), lab.ref.child_id("computes", NAME).lower()
    lab.wait(lambda: (lab.controller.instances.probed.get(key, opened) - opened).total_seconds() > 12, 60,
             "probes for longer than the idle time")
    assert record(lab)["state"] == "Running" and record(lab)["idleSince"] is None
    httpx.delete(f"{base}/api/terminals/{terminal.json()['name']}", headers=auth)
    stopped = wait_state(lab, "Stopped", 90)
    operation = LastOperation.from_row(stopped["lastOperation"])
    assert (operation.name, operation.status, operation.trigger.value) == ("Stop", "Succeeded", "IdleShutdown")


def test_schedules_stop_and_start_the_instance_on_the_compressed_calendar(lab):
    """Stop on the hour, start at half past: at the time scale of 0.01 an hour passes in 36 s."""
    create(lab, schedules={"computeStartStop": [
        {"status": "Enabled", "action": "Stop", "triggerType": "Cron",
         "cron": {"expression": "0 * * * *", "timeZone": "Pacific Standard Time"}},
        {"status": "Enabled", "action": "Start", "triggerType": "Cron",
         "cron": {"expression": "30 * * * *", "timeZone": "Pacific Standard Time"}}]})
    stopped = wait_state(lab, "Stopped", 120)
    assert LastOperation.from_row(stopped["lastOperation"]).trigger.value == "Schedule"
    started = lab.wait(lambda: (r := record(lab))["state"] == "Running" and
                       LastOperation.from_row(r["lastOperation"]).name == "Start" and r, 120, "the scheduled start")
    assert LastOperation.from_row(started["lastOperation"]).trigger.value == "Schedule"
