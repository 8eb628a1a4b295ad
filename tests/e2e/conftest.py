"""A composed amlemu stack of its own (project, port, data folder, network) for the end-to-end tests."""

import os

import httpx
import pytest

from emulator.cli.stack import Stack, apply_client_shim
from emulator.runtime.docker import DockerRuntime
from tests.e2e import stacks
from tests.e2e.stacks import DISK_LIMIT_GB, PIDS_LIMIT


@pytest.fixture(scope="session")
def stack(tmp_path_factory) -> Stack:
    # Limits a user may lower, lowered so that test_job_limits_sdk.py's fork bomb and full disk are small ones.
    env = stacks.own_env(tmp_path_factory.mktemp("amlemu-home"), "e2e", AMLEMU_JOB_PIDS_LIMIT=str(PIDS_LIMIT),
                         AMLEMU_JOB_DISK_LIMIT_GB=str(DISK_LIMIT_GB))
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    stack = stacks.compose_up(env)
    try:
        assert stack.wait_healthy(timeout=120), stack.compose("logs", capture=True).stdout
        os.environ.update(stack.env_vars())
        apply_client_shim()  # as PYTHONPATH would at start-up
        _raise_quota(stack)
        yield stack
    finally:
        stacks.remove(stack)
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def _raise_quota(stack: Stack) -> None:
    """The suite shares one stack, whose tests leave instances (they hold their cores, stopped or not) and idle nodes
    behind while the next ones create theirs: more than Azure's default 24 dedicated vCPUs at once. A subscription
    that runs them side by side has a larger quota, set here as a user sets it (`amlemu quota`); test_quota_sdk.py
    caps its own workspace to see the quota hold."""
    families = {f: 96 for f in ("standardDSv2Family", "standardDv3Family", "standardDSv3Family", "standardFSv2Family")}
    with stack.client() as client:
        response = client.put("/_emulator/quotas", json={"totalDedicatedCores": 192, "families": families})
    assert response.status_code == 200, response.text


@pytest.fixture(scope="session")
def credential(stack):
    from azure.identity import DefaultAzureCredential

    return DefaultAzureCredential()


@pytest.fixture(scope="session")
def ml_client(stack, credential):
    from azure.ai.ml import MLClient

    return MLClient(credential, os.environ["AMLEMU_SUBSCRIPTION_ID"], os.environ["AMLEMU_RESOURCE_GROUP"],
                    os.environ["AMLEMU_WORKSPACE"])


@pytest.fixture(scope="session")
def rest(stack) -> httpx.Client:
    """Raw ARM calls, with a token from the same emulated managed identity the SDK uses."""
    return stack.client()


@pytest.fixture(scope="session")
def workspace_path(stack) -> str:
    return (f"/subscriptions/{stack.subscription}/resourceGroups/{stack.resource_group}"
            f"/providers/Microsoft.MachineLearningServices/workspaces/{stack.workspace}")


@pytest.fixture()
def nodes_of(stack):
    """The node containers of a cluster, as Docker sees them."""
    runtime = DockerRuntime()

    def containers(cluster: str):
        return runtime.list({"amlemu.stack": os.environ["AMLEMU_STACK"], "amlemu.role": "node",
                             "amlemu.compute": cluster})

    return containers


@pytest.fixture(scope="session")
def job_dir(stack):
    """A job's artifacts folder in the stack's data folder (./outputs, user_logs/), as the host sees it."""
    from emulator.domain.ids import WorkspaceRef
    from emulator.domain.jobs import artifacts

    ref = WorkspaceRef(stack.subscription, stack.resource_group, stack.workspace)
    return lambda job_name: stack.home / artifacts.directory(ref, job_name)


@pytest.fixture(scope="session")
def job_outputs(job_dir):
    return lambda job_name: job_dir(job_name) / "outputs"
