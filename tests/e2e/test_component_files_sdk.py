"""Command components written the way Microsoft's docs write them (azureml-examples' registered-components pipeline:
train.yml and score.yml), registered with the unmodified SDK against the composed stack and read back: versions, the
latest, lists, the code they uploaded, the environments they name (a curated one, a workspace's by `@latest`)."""

import uuid
from pathlib import Path

import pytest
from azure.ai.ml import load_component
from azure.ai.ml.entities import Environment
from azure.core.exceptions import HttpResponseError, ResourceNotFoundError

pytestmark = pytest.mark.e2e
FILES = Path(__file__).parent / "docs_components"


def _files(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_docs_components_register_read_back_and_name_what_they_use(ml_client, tmp_path):
    env = ml_client.environments.create_or_update(Environment(name="component-env", image="python:3.11-slim"))
    train = ml_client.components.create_or_update(load_component(FILES / "train.yml"))
    score = ml_client.components.create_or_update(load_component(FILES / "score.yml"))
    again = ml_client.components.create_or_update(load_component(FILES / "train.yml"))  # no version: the next one
    assert int(again.version) == int(train.version) + 1

    assert score.version == "1b" and score.display_name == "Score"
    # `azureml:component-env@latest` became the version that was latest when the component was registered
    assert score.environment.endswith(f"/environments/component-env/versions/{env.version}")
    assert train.environment == "azureml://registries/azureml/environments/sklearn-1.5/labels/latest"
    read = ml_client.components.get("my_train", version=train.version)
    assert read.id == train.id and read.command == train.command and read.code == train.code
    assert read.inputs["max_epocs"].min == 0 and read.inputs["max_epocs"].max == 100
    assert read.inputs["learning_rate"].default == 0.01
    assert read.inputs["learning_rate_schedule"].enum == ["step", "time-based"]
    assert read.outputs["model_output"].type == "uri_folder"
    assert ml_client.components.get("my_train", label="latest").version == again.version == \
        ml_client.components.get("my_train").version
    listed = {c.name: c.latest_version for c in ml_client.components.list()}
    assert listed["my_train"] == again.version and listed["my_score"] == "1b"
    assert [c.version for c in ml_client.components.list(name="my_train")][:2] == [again.version, train.version]

    # the code the SDK uploaded for the component is the folder the YAML names
    ml_client.components.download("my_score", download_path=tmp_path / "score", version="1b")
    assert _files(tmp_path / "score" / "code") == _files(FILES / "score_src")
    assert (tmp_path / "score" / "component_spec.yaml").is_file()

    # a version is immutable: registering the same version with another command is refused, and changes nothing
    changed = load_component(FILES / "score.yml")
    changed.command = changed.command.replace("--test_data ${{inputs.test_data}}", "")
    with pytest.raises(HttpResponseError) as refused:
        ml_client.components.create_or_update(changed)
    assert refused.value.status_code == 409 and "properties.componentSpec.command" in str(refused.value)
    assert ml_client.components.get("my_score", version="1b").command == score.command

    ml_client.components.archive("my_train", version=again.version)
    assert ml_client.components.get("my_train").version == train.version
    ml_client.components.restore("my_train", version=again.version)
    with pytest.raises(ResourceNotFoundError):
        ml_client.components.get("my_train", version=f"nope-{uuid.uuid4().hex[:6]}")
