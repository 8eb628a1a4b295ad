"""Compute instances through the unmodified azure-ai-ml SDK against the composed stack: a real workstation
(JupyterLab on 127.0.0.1), its home kept across stop and start, jobs on it, and bad requests refused."""

import os
import subprocess
import sys
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import docker
import httpx
import pytest
from azure.ai.ml import command
from azure.ai.ml.entities import ComputeInstance, ComputeInstanceSshSettings, Environment
from azure.core.exceptions import HttpResponseError

from emulator.runtime.docker import DockerRuntime
from tests import gate
from tests.waiting import wait_until

pytestmark = pytest.mark.e2e
NAME = "e2e-ci"
NOTE = "written through Jupyter's contents API\n"


def _containers(role: str, name: str = NAME):
    return [c for c in DockerRuntime().list({"amlemu.stack": os.environ["AMLEMU_STACK"], "amlemu.role": role,
                                             "amlemu.compute": name}) if c.running]


def _jupyter(instance: ComputeInstance) -> tuple[str, dict]:
    """The instance's JupyterLab base URL and the header that authenticates to it, from its `services`."""
    lab = next(s["endpointUri"] for s in instance.services if s["displayName"] == "Jupyter Lab")
    parts = urlsplit(lab)
    assert parts.hostname == "127.0.0.1", lab  # published on loopback only
    return f"{parts.scheme}://{parts.netloc}", {"Authorization": f"token {parse_qs(parts.query)['token'][0]}"}


def _operation(instance: ComputeInstance) -> tuple[str, str, str]:
    op = instance.last_operation
    return op["operationName"], op["operationStatus"], op["operationTrigger"]


def test_an_instance_is_a_workstation_whose_home_survives_stop_start_and_restart(ml_client):
    created = ml_client.compute.begin_create_or_update(ComputeInstance(name=NAME, size="Standard_DS3_v2")).result()
    instance = ml_client.compute.get(NAME)
    assert created.provisioning_state == "Succeeded" and instance.state == "Running"
    assert _operation(instance) == ("Create", "Succeeded", "User")
    assert len(_containers("instance")) == 1 and len(_containers("agent")) == 1
    limits = docker.from_env().containers.get(_containers("instance")[0].id).attrs["HostConfig"]
    assert (limits["NanoCpus"], limits["Memory"]) == (10**9, int(3.5 * 2**30))  # DS3_v2 (4 vCPUs, 14 GiB) × 0.25
    base, auth = _jupyter(instance)
    assert httpx.get(f"{base}/api/status").status_code in (401, 403)  # a token or nothing
    written = httpx.put(f"{base}/api/contents/notes.txt", headers=auth,
                        json={"type": "file", "format": "text", "content": NOTE})
    assert written.status_code in (200, 201), written.text

    ml_client.compute.begin_stop(NAME).result()
    stopped = ml_client.compute.get(NAME)
    assert stopped.state == "Stopped" and _operation(stopped) == ("Stop", "Succeeded", "User")
    assert not _containers("instance") and not _containers("agent")  # a stopped instance runs nothing
    with pytest.raises(HttpResponseError, match="Stopped"):  # an illegal transition, refused
        ml_client.compute.begin_stop(NAME).result()

    ml_client.compute.begin_start(NAME).result()
    started = ml_client.compute.get(NAME)
    assert started.state == "Running" and _operation(started) == ("Start", "Succeeded", "User")
    assert _jupyter(started)[0] == base  # the same URL as before the stop
    base, auth = _jupyter(started)
    read = httpx.get(f"{base}/api/contents/notes.txt", headers=auth)
    assert read.status_code == 200 and read.json()["content"] == NOTE
    shell = subprocess.run([str(Path(sys.executable).with_name("amlemu")), "instance", "shell", NAME, "cat",
                            "notes.txt"], capture_output=True, text=True, timeout=60)
    assert shell.returncode == 0 and shell.stdout == NOTE, shell.stderr

    ml_client.compute.begin_restart(NAME).result()
    restarted = ml_client.compute.get(NAME)
    assert restarted.state == "Running" and _operation(restarted)[:2] == ("Restart", "Succeeded")
    base, auth = _jupyter(restarted)
    assert httpx.get(f"{base}/api/contents/notes.txt", headers=auth).json()["content"] == NOTE


def test_a_job_runs_on_the_instance_and_shows_job_running(ml_client, job_outputs):
    ml_client.compute.begin_create_or_update(ComputeInstance(name=NAME, size="Standard_DS3_v2")).result()
    job = ml_client.jobs.create_or_update(command(command=f"echo on the instance && {gate.WAIT}",
                                                  environment=Environment(image="python:3.11-slim"), compute=NAME))
    wait_until(lambda: ml_client.compute.get(NAME).state == "JobRunning", timeout=180, interval=0.5,
               message="the instance to show JobRunning")
    assert ml_client.jobs.get(job.name).status == "Running"
    gate.release(job_outputs(job.name))
    wait_until(lambda: ml_client.jobs.get(job.name).status == "Completed", timeout=120, interval=0.5,
               message="the job to complete")
    wait_until(lambda: ml_client.compute.get(NAME).state == "Running", timeout=30, interval=0.5,
               message="the instance back to Running")


def test_bad_instances_are_refused_and_delete_removes_everything(ml_client, rest, workspace_path):
    for bad, field in ((ComputeInstance(name="e2e-ci-bad", size="Standard_Nope"), "vmSize"),
                       (ComputeInstance(name="e2e-ci-bad", idle_time_before_shutdown_minutes=5),
                        "idleTimeBeforeShutdown")):
        with pytest.raises(HttpResponseError, match=field):
            ml_client.compute.begin_create_or_update(bad).result()
    answer = rest.put(f"{workspace_path}/computes/e2e-ci-bad", params={"api-version": "2023-08-01-preview"},
                      json={"properties": {"computeType": "ComputeInstance",
                                           "properties": {"vmSize": "Standard_DS3_v2", "vmPriority": "LowPriority"}}})
    assert answer.status_code == 400 and "vmPriority" in answer.json()["error"]["message"]
    assert "e2e-ci-bad" not in [c.name for c in ml_client.compute.list()]

    created_stopped = rest.put(f"{workspace_path}/computes/e2e-ci-off", params={"api-version": "2023-08-01-preview"},
                               json={"properties": {"computeType": "ComputeInstance", "properties": {
                                   "vmSize": "Standard_DS3_v2", "state": "Stopped"}}})
    assert created_stopped.status_code == 201, created_stopped.text
    wait_until(lambda: ml_client.compute.get("e2e-ci-off").state == "Stopped", timeout=120, interval=0.5,
               message="the instance created stopped to be Stopped")
    assert not _containers("instance", "e2e-ci-off")
    ml_client.compute.begin_delete("e2e-ci-off").result()

    ml_client.compute.begin_delete(NAME).result()
    assert NAME not in [c.name for c in ml_client.compute.list()]
    assert not _containers("instance") and not _containers("agent")
    volumes = DockerRuntime().volumes({"amlemu.stack": os.environ["AMLEMU_STACK"], "amlemu.compute": NAME})
    assert not volumes, volumes


def _ssh(key: Path, port: int, *command: str) -> subprocess.CompletedProcess:
    options = ["-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null", "-o", "BatchMode=yes",
               "-o", "ConnectTimeout=10", "-o", "IdentitiesOnly=yes"]
    return subprocess.run(["ssh", *options, "-i", str(key), "-p", str(port), "azureuser@127.0.0.1", *command],
                          capture_output=True, text=True, timeout=60)


def test_ssh_with_the_users_key_on_loopback_and_no_other_key(ml_client, tmp_path):
    keys = {}
    for who in ("user", "stranger"):
        keys[who] = tmp_path / who
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(keys[who])], check=True)
    name = "e2e-ci-ssh"
    ml_client.compute.begin_create_or_update(ComputeInstance(
        name=name, size="Standard_DS3_v2", ssh_public_access_enabled=True,
        ssh_settings=ComputeInstanceSshSettings(ssh_key_value=(tmp_path / "user.pub").read_text()))).result()
    try:
        instance = ml_client.compute.get(name)
        assert instance.ssh_public_access_enabled and instance.ssh_settings.admin_username == "azureuser"
        port = instance.ssh_settings.ssh_port
        assert port and port != 50000, port  # the host port published on 127.0.0.1 for the instance's 50000
        logged_in = wait_until(lambda: (r := _ssh(keys["user"], port, "whoami; pwd")).returncode == 0 and r,
                               timeout=60, interval=1, message="sshd to let the user in")
        assert logged_in.stdout.split() == ["azureuser", "/home/azureuser"], logged_in.stdout
        refused = _ssh(keys["stranger"], port, "true")
        assert refused.returncode == 255 and "Permission denied" in refused.stderr, refused.stderr
    finally:
        ml_client.compute.begin_delete(name).result()
    assert not _containers("instance", name)
