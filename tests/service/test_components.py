"""Command components in-process: versions in a workspace (explicit and next versions, get by version and
azureml_default, lists without anonymous ones, archive and restore), the code and environment they name (the
workspace's, curated, a registry's), in registries too; the reference resolver pipelines call; and bad input
refused naming the field with nothing stored."""

import pytest

from emulator.domain.assets import curated
from emulator.domain.ids import WorkspaceRef
from emulator.errors import ValidationFailed
from emulator.services import components, registries
from emulator.store.tables import AssetVersion
from tests.service.test_api import API, SUB, WS_PATH, assert_arm_error
from tests.service.test_assets import code_body, env_body
from tests.service.test_user_registries import DP, PLANE, REG, _rows, put_registry, upload

COMPONENTS = f"{WS_PATH}/components"
WS = WorkspaceRef(SUB, "amlemu", "amlemu")
CODE = f"azureml:{WS_PATH}/codes/src-uuid/versions/1"
ENV = f"azureml:{WS_PATH}/environments/my-env/versions/1"


def spec(**fields) -> dict:
    return {"name": "my_train", "type": "command", "code": CODE, "environment": ENV, "is_deterministic": True,
            "command": "python train.py --epochs ${{inputs.epochs}} --out ${{outputs.model}}",
            "inputs": {"epochs": {"type": "integer", "min": "0", "max": "100", "default": "10"}},
            "outputs": {"model": {"type": "uri_folder"}}, "_source": "YAML.COMPONENT", **fields}


def body(anonymous: bool = False, **fields) -> dict:
    return {"properties": {"componentSpec": spec(**fields), "isAnonymous": anonymous, "isArchived": False,
                           "properties": {"client_component_hash": "h"}, "tags": {}}}


@pytest.fixture
def assets(client, auth):
    """The code and environment versions the SDK registers before a component."""
    assert client.put(f"{WS_PATH}/codes/src-uuid/versions/1", params=API, headers=auth,
                      json=code_body()).status_code == 201
    assert client.put(f"{WS_PATH}/environments/my-env/versions/1", params=API, headers=auth,
                      json=env_body()).status_code == 201


def put(client, auth, name: str, version: str, payload: dict, expected: int = 201) -> dict:
    response = client.put(f"{COMPONENTS}/{name}/versions/{version}", params=API, headers=auth, json=payload)
    assert response.status_code == expected, response.text
    return response.json()


def names(client, auth, **params) -> list[str]:
    return [c["name"] for c in client.get(COMPONENTS, params={**API, **params}, headers=auth).json()["value"]]


def test_a_component_version_reads_back_as_sent(client, auth, assets):
    made = put(client, auth, "my_train", "1", body())
    assert made["id"] == f"{COMPONENTS}/my_train/versions/1" and made["name"] == "1"
    assert made["type"] == "Microsoft.MachineLearningServices/workspaces/components/versions"
    props = made["properties"]
    assert props["componentSpec"] == {**spec(), "version": "1"} and props["provisioningState"] == "Succeeded"
    assert props["properties"] == {"client_component_hash": "h"} and props["isAnonymous"] is False
    assert client.get(f"{COMPONENTS}/my_train/versions/1", params=API, headers=auth).json() == made


def test_next_versions_latest_default_and_lists(client, auth, assets):
    assert_arm_error(client.get(f"{COMPONENTS}/my_train", params=API, headers=auth), 404, target="name")
    put(client, auth, "my_train", "1", body())
    container = client.get(f"{COMPONENTS}/my_train", params=API, headers=auth).json()
    assert (container["properties"]["latestVersion"], container["properties"]["nextVersion"]) == ("1", "2")
    put(client, auth, "my_train", "2", body(command="python train.py --out ${{outputs.model}}"))
    default = client.get(f"{COMPONENTS}/my_train/versions/azureml_default", params=API, headers=auth).json()
    assert default["name"] == "2" and default["properties"]["componentSpec"]["version"] == "2"
    newest = client.get(f"{COMPONENTS}/my_train/versions", headers=auth,
                        params={**API, "$orderBy": "createdtime desc", "$top": "1"}).json()["value"]
    assert [v["name"] for v in newest] == ["2"]
    assert names(client, auth) == ["my_train"]


def test_archive_and_restore_versions_and_whole_components(client, auth, assets):
    one = put(client, auth, "my_train", "1", body())
    put(client, auth, "my_train", "2", body(command="echo ${{outputs.model}}"))
    archived = {**one, "properties": {**one["properties"], "isArchived": True}}  # the SDK's archive of a version
    assert put(client, auth, "my_train", "1", archived, expected=200)["properties"]["isArchived"] is True
    listed = client.get(f"{COMPONENTS}/my_train/versions", params=API, headers=auth).json()["value"]
    assert [v["name"] for v in listed] == ["2"]
    whole = client.put(f"{COMPONENTS}/my_train", params=API, headers=auth, json={"properties": {"isArchived": True}})
    assert whole.status_code == 200 and whole.json()["properties"]["isArchived"] is True
    assert names(client, auth) == [] and names(client, auth, listViewType="ArchivedOnly") == ["my_train"]
    assert_arm_error(client.get(f"{COMPONENTS}/my_train/versions/azureml_default", params=API, headers=auth), 404)
    client.put(f"{COMPONENTS}/my_train", params=API, headers=auth, json={"properties": {"isArchived": False}})
    assert names(client, auth) == ["my_train"]


def test_anonymous_components_are_kept_but_not_listed(client, auth, assets):
    anonymous = body(anonymous=True, name="azureml_anonymous", version="1")
    made = put(client, auth, "azureml_anonymous", "5b0c-hash", anonymous)
    assert made["id"] == f"{COMPONENTS}/azureml_anonymous/versions/5b0c-hash"
    assert made["properties"]["componentSpec"]["version"] == "5b0c-hash"
    put(client, auth, "azureml_anonymous", "5b0c-hash", anonymous, expected=200)  # the next pipeline's step
    # the same step loaded by load_component keeps its own name; the SDK's hash leaves names out: the same version
    put(client, auth, "azureml_anonymous", "5b0c-hash", body(anonymous=True, name="my_prep", version="1"),
        expected=200)
    assert names(client, auth) == [] and names(client, auth, listViewType="All") == []
    versions = client.get(f"{COMPONENTS}/azureml_anonymous/versions", params=API, headers=auth).json()["value"]
    assert [v["name"] for v in versions] == ["5b0c-hash"]


def test_a_version_is_immutable_but_its_description_and_tags_may_change(client, auth, assets):
    put(client, auth, "my_train", "1", body())
    described = body(description="trains", display_name="Train")
    described["properties"]["tags"] = {"team": "ml"}
    assert put(client, auth, "my_train", "1", described, expected=200)["properties"]["tags"] == {"team": "ml"}
    changed = client.put(f"{COMPONENTS}/my_train/versions/1", params=API, headers=auth,
                         json=body(command="python other.py --out ${{outputs.model}}"))
    error = assert_arm_error(changed, 409, code="Conflict", target="properties.componentSpec.command")
    assert "immutable" in error["message"]
    kept = client.get(f"{COMPONENTS}/my_train/versions/1", params=API, headers=auth).json()
    assert kept["properties"]["componentSpec"]["command"] == spec()["command"]


def test_curated_and_registry_environments(client, auth, app, settings, assets):
    put(client, auth, "curated", "1", body(name="curated", environment="azureml:AzureML-sklearn-1.5@latest"))
    family = f"{WS_PATH}/environments/AzureML-sklearn-1.5/versions/{curated.LATEST}"
    assert client.get(family, params=API, headers=auth).status_code == 200  # the workspace's, as a job makes it
    put(client, auth, "via_registry", "1", body(
        name="via_registry", environment="azureml://registries/azureml/environments/lightgbm-3.3/labels/latest"))
    put_registry(client, auth)
    assert client.put(f"{PLANE}/environments/team-env/versions/1", params=DP, headers=auth,
                      json=env_body()).status_code == 201
    team = "azureml://registries/shared-reg/environments/team-env/versions/1"
    assert put(client, auth, "team", "1", body(name="team", environment=team))[
        "properties"]["componentSpec"]["environment"] == team


@pytest.mark.parametrize(("fields", "target"), [
    ({"environment": f"azureml:{WS_PATH}/environments/missing/versions/1"}, "environment"),
    ({"environment": "azureml:AzureML-sklearn-9.9@latest"}, "environment"),
    ({"environment": "azureml://registries/nowhere/environments/e/versions/1"}, "environment"),
    ({"environment": "python:3.11-slim"}, "environment"),
    ({"code": f"azureml:{WS_PATH}/codes/missing/versions/1"}, "code"),
    ({"code": "azureml:/subscriptions/x/resourceGroups/y/providers/Microsoft.MachineLearningServices/workspaces/"
              "other/codes/src-uuid/versions/1"}, "code"),
    ({"code": "./src"}, "code"),
    ({"inputs": {"epochs": {"type": "float"}}}, "inputs.epochs.type"),
    ({"outputs": {"model": {"type": "model"}}}, "outputs.model.type"),
    ({"command": "python train.py ${{inputs.epoch}}"}, "command"),
    ({"inputs": {"epochs": {"type": "integer", "max": "5", "default": "10"}}}, "inputs.epochs.default"),
    ({"type": "spark"}, "type"),
    ({"name": "someone_else"}, "name"),
])
def test_bad_components_are_refused_naming_the_field_and_nothing_is_stored(client, auth, app, assets, fields,
                                                                           target):
    before = _rows(app, AssetVersion)
    error = assert_arm_error(client.put(f"{COMPONENTS}/my_train/versions/1", params=API, headers=auth,
                                        json=body(**fields)), 400, target=f"properties.componentSpec.{target}")
    assert error["code"] == "ValidationError"
    assert _rows(app, AssetVersion) == before


@pytest.mark.parametrize(("path", "target"), [("My-Train/versions/1", "name"), ("my_train/versions/-1", "version"),
                                              ("my_train/versions/azureml_default", "version")])
def test_bad_names_and_versions_are_refused(client, auth, app, assets, path, target):
    before = _rows(app, AssetVersion)
    payload = body(name=path.split("/")[0])
    assert_arm_error(client.put(f"{COMPONENTS}/{path}", params=API, headers=auth, json=payload), 400, target=target)
    assert _rows(app, AssetVersion) == before


def test_unknown_components_and_versions_are_404(client, auth, assets):
    put(client, auth, "my_train", "1", body())
    assert_arm_error(client.get(f"{COMPONENTS}/my_train/versions/9", params=API, headers=auth), 404,
                     target="version")
    assert_arm_error(client.get(f"{COMPONENTS}/nope/versions/azureml_default", params=API, headers=auth), 404,
                     target="name")


def test_components_in_a_registry(client, auth, app, settings):
    put_registry(client, auth)
    code_url = upload(settings, "train.py", "print('hi')")
    assert client.put(f"{PLANE}/codes/src/versions/1", params=DP, headers=auth,
                      json={"properties": {"codeUri": code_url}}).status_code == 201
    in_registry = body(code="azureml://registries/shared-reg/codes/src/versions/1",
                       environment="azureml://registries/azureml/environments/sklearn-1.5/labels/latest")
    made = client.put(f"{PLANE}/components/my_train/versions/1", params=DP, headers=auth, json=in_registry)
    assert made.status_code == 201, made.text
    assert made.json()["id"] == "azureml://registries/shared-reg/components/my_train/versions/1"
    default = client.get(f"{PLANE}/components/my_train/versions/azureml_default", params=DP, headers=auth)
    assert default.json()["name"] == "1"
    listed = client.get(f"{PLANE}/components", params=DP, headers=auth).json()["value"]
    assert [c["name"] for c in listed] == ["my_train"] and listed[0]["properties"]["nextVersion"] == "2"
    before = _rows(app, AssetVersion)
    assert_arm_error(client.put(f"{PLANE}/components/my_train/versions/2", params=DP, headers=auth, json=body()),
                     400, target="properties.componentSpec.code")  # a workspace's code
    assert _rows(app, AssetVersion) == before


def test_azureml_registry_is_read_only_for_components(client, auth, settings):
    plane = f"/mferp/managementfrontend{registries.builtin_ref(settings).arm_id}"
    listed = client.get(f"{plane}/components", params=DP, headers=auth)
    assert listed.status_code == 200 and listed.json()["value"] == []
    assert_arm_error(client.put(f"{plane}/components/c/versions/1", params=DP, headers=auth, json=body()), 403,
                     code="AuthorizationFailed")


def test_the_resolver_pipelines_call(client, auth, app, settings, assets):
    put(client, auth, "my_train", "1", body())
    put(client, auth, "my_train", "2", body(command="echo ${{outputs.model}}"))
    put_registry(client, auth)
    put_registry_component = client.put(f"{PLANE}/components/shared/versions/3", params=DP, headers=auth, json=body(
        name="shared", code=None, environment="azureml:AzureML-sklearn-1.5@latest"))
    assert put_registry_component.status_code == 201, put_registry_component.text
    with app.state.context.store.transaction() as repo:
        found = {ref: components.resolve(repo, WS, ref, "properties.jobs.train.componentId") for ref in (
            "azureml:my_train:1", "azureml:my_train@latest", f"{WS_PATH}/components/my_train/versions/1",
            f"{WS_PATH}/components/my_train/labels/latest",
            "azureml://registries/shared-reg/components/shared/labels/latest")}
        assert [(f.row.name, f.row.version) for f in found.values()] == [
            ("my_train", "1"), ("my_train", "2"), ("my_train", "1"), ("my_train", "2"), ("shared", "3")]
        first = found["azureml:my_train:1"]
        assert first.id == f"{WS_PATH}/components/my_train/versions/1"
        assert first.spec.command == spec()["command"] and first.spec.code_id == CODE[len("azureml:"):]
        assert first.spec.environment_id == ENV[len("azureml:"):] and first.spec.inputs == spec()["inputs"]
        assert found["azureml://registries/shared-reg/components/shared/labels/latest"].id == \
            f"azureml://registries/{REG.name}/components/shared/versions/3"
        for bad in ("azureml:my_train:9", "azureml:nope@latest", "azureml://registries/nowhere/components/c/versions/1",
                    "azureml:/subscriptions/x/resourceGroups/y/providers/Microsoft.MachineLearningServices/workspaces/"
                    "other/components/my_train/versions/1", "my_train"):
            with pytest.raises(ValidationFailed) as err:
                components.resolve(repo, WS, bad, "properties.jobs.train.componentId")
            assert err.value.target == "properties.jobs.train.componentId", bad


def pipeline_spec(**fields) -> dict:
    """A pipeline component as the SDK registers one: its step names a registered component by ARM id."""
    step = {"type": "command", "componentId": f"{WS_PATH}/components/my_train/versions/1",
            "inputs": {"epochs": {"job_input_type": "literal", "value": "${{parent.inputs.n}}"}},
            "outputs": {"model": {"type": "literal", "value": "${{parent.outputs.trained}}"}}}
    return {"name": "train_pipe", "type": "pipeline", "inputs": {"n": {"type": "integer", "default": "3"}},
            "outputs": {"trained": {"type": "uri_folder"}}, "jobs": {"train": step}, "_source": "YAML.COMPONENT",
            **fields}


def test_a_pipeline_component_registers_its_steps_checked(client, auth, app, assets):
    put(client, auth, "my_train", "1", body())
    made = put(client, auth, "train_pipe", "1", {"properties": {"componentSpec": pipeline_spec()}})
    assert made["properties"]["componentSpec"]["jobs"]["train"]["componentId"].endswith("my_train/versions/1")
    before = _rows(app, AssetVersion)
    spec = pipeline_spec()
    bad_step = {**spec["jobs"]["train"], "componentId": f"{WS_PATH}/components/missing/versions/1"}
    unbound = {**spec["jobs"]["train"], "inputs": {"epochs": {"job_input_type": "literal",
                                                              "value": "${{parent.inputs.nope}}"}}}
    nested = {**spec["jobs"]["train"], "componentId": f"{WS_PATH}/components/train_pipe/versions/1"}
    for jobs, target in (({"train": bad_step}, "jobs.train.componentId"),
                         ({"train": unbound}, "jobs.train.inputs.epochs"),
                         ({"train": nested}, "jobs.train.componentId"), ({}, "jobs")):
        assert_arm_error(client.put(f"{COMPONENTS}/train_pipe/versions/2", params=API, headers=auth,
                                    json={"properties": {"componentSpec": pipeline_spec(jobs=jobs)}}), 400,
                         target=f"properties.componentSpec.{target}")
    assert _rows(app, AssetVersion) == before
