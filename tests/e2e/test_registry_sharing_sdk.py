"""A user's registry through the unmodified azure-ai-ml SDK against the composed stack: create it, put a model in
it, share a workspace environment into it, run a job of the workspace in the registry's environment, delete it."""

import os
import uuid

import pytest
from azure.ai.ml import MLClient, command
from azure.ai.ml.entities import Environment, Model, Registry, RegistryRegionDetails
from azure.core.exceptions import HttpResponseError, ResourceNotFoundError

from tests.waiting import wait_until

pytestmark = pytest.mark.e2e


@pytest.fixture
def registry(ml_client):
    name = f"e2ereg{uuid.uuid4().hex[:8]}"
    made = ml_client.registries.begin_create(Registry(
        name=name, location="eastus", replication_locations=[RegistryRegionDetails(location="eastus"),
                                                              RegistryRegionDetails(location="westeurope")])).result()
    yield made
    if name in [r.name for r in ml_client.registries.list()]:
        ml_client.registries.begin_delete(name=name).result()


def test_a_registry_holds_a_model_and_a_shared_environment_a_workspace_job_runs_in(ml_client, credential, registry,
                                                                                  tmp_path):
    assert [r.location for r in registry.replication_locations] == ["eastus", "westeurope"]
    assert registry.name in [r.name for r in ml_client.registries.list(scope="subscription")]
    assert ml_client.registries.get(registry.name).id.endswith(f"/registries/{registry.name}")
    in_registry = MLClient(credential, os.environ["AMLEMU_SUBSCRIPTION_ID"], os.environ["AMLEMU_RESOURCE_GROUP"],
                           registry_name=registry.name)

    (tmp_path / "model.pkl").write_text("weights")
    model = in_registry.models.create_or_update(Model(name="clf", version="1", path=str(tmp_path / "model.pkl")))
    assert model.id == f"azureml://registries/{registry.name}/models/clf/versions/1"
    assert in_registry.models.get("clf", label="latest").version == "1"
    assert [m.version for m in in_registry.models.list(name="clf")] == ["1"]

    env_name = f"ws-env-{uuid.uuid4().hex[:6]}"
    ml_client.environments.create_or_update(Environment(name=env_name, version="1", image="python:3.11-slim"))
    shared = ml_client.environments.share(env_name, "1", registry_name=registry.name, share_with_name="shared-env",
                                          share_with_version="1")
    assert shared.id == f"azureml://registries/{registry.name}/environments/shared-env/versions/1"
    with pytest.raises(ResourceNotFoundError):
        in_registry.environments.get("shared-env", version="9")

    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "hello.py").write_text("import sys\nprint('hello from', sys.version_info[:2])\n")
    reference = f"azureml://registries/{registry.name}/environments/shared-env/labels/latest"
    job = ml_client.jobs.create_or_update(command(command="python hello.py", code=str(tmp_path / "src"),
                                                  environment=reference, experiment_name="registries"))
    assert job.environment == reference  # shown as given
    status = wait_until(lambda: (s := ml_client.jobs.get(job.name).status) in ("Completed", "Failed") and s,
                        timeout=300, interval=1, message=f"job {job.name} to end")
    assert status == "Completed"

    ml_client.registries.begin_delete(name=registry.name).result()
    assert registry.name not in [r.name for r in ml_client.registries.list()]
    with pytest.raises(HttpResponseError) as gone:
        MLClient(credential, "s", "r", registry_name=registry.name).models.get("clf", version="1")
    assert "ResourceNotFound" in str(gone.value) and registry.name in str(gone.value)
