"""The Azure CLI against a composed stack. `az` installs from PyPI; its `ml` extension does not (README, "az ml
CLI"), so `az ml ...` cannot run here. What core `az` does is tested: the emulator's cloud from its metadata (by
`amlemu env` or by `az cloud register`), `az login --identity` on the emulated managed identity, `az account`, and
ARM calls with `az rest` and `az resource`: a cluster, an environment and a command job that runs to Completed."""

import json
import os
import uuid

import pytest

from tests.e2e import az_cli
from tests.waiting import wait_until

pytestmark = pytest.mark.e2e
API = "api-version=2024-10-01"


@pytest.fixture(scope="module")
def az_executable():
    return az_cli.installed()


def _quiet(env: dict[str, str]) -> dict[str, str]:
    return {**env, "AZURE_CORE_COLLECT_TELEMETRY": "false", "AZURE_CORE_NO_COLOR": "true"}


def test_az_after_amlemu_env_logs_in_and_runs_a_job(stack, az_executable, workspace_path):
    az = az_cli.Az(az_executable, _quiet(dict(os.environ)))  # the session holds `amlemu env`'s variables
    cloud = az("cloud", "show")
    assert (cloud["name"], cloud["isActive"]) == ("AzureMLEmulator", True)
    assert cloud["endpoints"]["resourceManager"] == f"{stack.url}/"
    assert stack.subscription in [a["id"] for a in az("login", "--identity")]  # with others that hold a workspace
    account = az("account", "show")  # the default workspace's subscription comes first, so it is the default
    assert (account["id"], account["user"]["assignedIdentityInfo"]) == (stack.subscription, "MSI")

    suffix = uuid.uuid4().hex[:6]
    cluster, env, job = (f"{workspace_path}/computes/az-{suffix}", f"{workspace_path}/environments/az-{suffix}",
                         f"{workspace_path}/jobs/az-hello-{suffix}")
    az("rest", "--method", "put", "--url", f"{cluster}?{API}", "--body", json.dumps(
        {"location": "local", "properties": {"computeType": "AmlCompute", "properties": {
            "vmSize": "Standard_DS2_v2", "scaleSettings": {"minNodeCount": 0, "maxNodeCount": 1,
                                                           "nodeIdleTimeBeforeScaleDown": "PT30S"}}}}))
    wait_until(lambda: az("rest", "--url", f"{cluster}?{API}")["properties"]["provisioningState"] == "Succeeded",
               timeout=120, interval=1, message="the cluster az made")
    az("rest", "--method", "put", "--url", f"{env}/versions/1?{API}",
       "--body", json.dumps({"properties": {"image": "python:3.11-slim"}}))
    created = az("rest", "--method", "put", "--url", f"{job}?{API}", "--body", json.dumps({"properties": {
        "jobType": "Command", "experimentName": "az-cli", "command": "python -c 'print(6 * 7)'",
        "environmentId": f"{env}/versions/1", "computeId": cluster}}))
    assert created["properties"]["status"] in ("NotStarted", "Starting", "Preparing", "Queued")
    status = wait_until(lambda: _ended(az("rest", "--url", f"{job}?{API}")), timeout=300, interval=2,
                        message="the job az submitted to end")
    assert status == "Completed"
    details = az("rest", "--url", f"/history/v1.0{workspace_path}/runs/az-hello-{suffix}/details")  # RunHistory
    log = az.run("rest", "--url", details["logFiles"]["user_logs/std_log.txt"], "--skip-authorization-header")
    assert log.returncode == 0 and "42" in log.stdout.splitlines(), log.stdout + log.stderr
    shown = az("resource", "show", "--ids", job, "--api-version", "2024-10-01")
    assert (shown["name"], shown["properties"]["computeId"]) == (f"az-hello-{suffix}", cluster)
    az("rest", "--method", "delete", "--url", f"{cluster}?{API}&underlyingResourceAction=Delete")
    wait_until(lambda: az.run("rest", "--url", f"{cluster}?{API}").returncode != 0, timeout=120, interval=1,
               message="the cluster to go")


def _ended(job: dict) -> str | None:
    status = job["properties"]["status"]
    return status if status in ("Completed", "Failed", "Canceled") else None


def test_az_registers_the_emulator_cloud_from_its_metadata(stack, az_executable, workspace_path, tmp_path):
    """A shell without `amlemu env`'s cloud: the CA bundle and the managed identity only, as its own az config."""
    env = {k: v for k, v in os.environ.items() if k not in ("ARM_CLOUD_METADATA_URL", "SSL_CERT_FILE")}
    az = az_cli.Az(az_executable, _quiet({**env, "AZURE_CONFIG_DIR": str(tmp_path / "azure")}))
    az("cloud", "register", "--name", "amlemu", "--endpoint-resource-manager", stack.url)
    az("cloud", "set", "--name", "amlemu")
    cloud = az("cloud", "show")
    assert cloud["endpoints"]["activeDirectoryResourceId"] == f"{stack.url}/"
    assert cloud["suffixes"]["storageEndpoint"] == f"localhost:{stack.port}"
    assert stack.subscription in [a["id"] for a in az("login", "--identity")]
    assert az("rest", "--url", f"{workspace_path}?{API}")["name"] == stack.workspace
    token = az("account", "get-access-token")
    assert token["subscription"] == stack.subscription and token["tokenType"] == "Bearer"
    listed = az.run("resource", "list")  # ARM's generic resource list is no Azure ML route: said so, not a 500
    assert listed.returncode != 0 and "NoRegisteredProviderFound" in listed.stderr
