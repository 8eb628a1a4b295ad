"""The registry routes in-process: discovery by name, the data plane under the scope discovery gives, refusals
that change nothing."""

import pytest

from emulator.domain.assets import curated

DISCOVERY = "/registrymanagement/v1.0/registries/{}/discovery"
V = {"api-version": "2021-10-01-dataplanepreview"}


def _scope(api, name="azureml") -> tuple[str, dict]:
    found = api.client.get(DISCOVERY.format(name), headers=api.auth)
    assert found.status_code == 200, found.text
    doc = found.json()
    base = doc["primaryRegionResourceProviderUri"]
    path = (f"/mferp/managementfrontend/subscriptions/{doc['subscriptionId']}/resourceGroups/{doc['resourceGroup']}"
            f"/providers/Microsoft.MachineLearningServices/registries/{doc['registryName']}")
    return path, {**doc, "base": base}


def test_discovery_names_the_registry_scope_and_the_emulator_as_its_host(shared):
    _, doc = _scope(shared, "AzureML")
    assert doc["registryName"] == "azureml" and doc["base"] == "https://localhost:8443/"
    assert doc["primaryRegion"] in doc["regions"] and doc["registryFqdns"]


def test_paths_match_without_case_and_ids_are_registry_asset_ids(shared):
    path, _ = _scope(shared)
    upper = path.replace("/mferp/managementfrontend", "/MFERP/ManagementFrontEnd").replace("/registries/",
                                                                                             "/Registries/")
    got = shared.client.get(f"{upper}/Environments/SKLEARN-1.5/versions/1", params=V, headers=shared.auth)
    assert got.status_code == 200, got.text
    body = got.json()
    assert body["id"] == "azureml://registries/azureml/environments/sklearn-1.5/versions/1"
    assert body["properties"]["environmentType"] == "Curated" and body["properties"]["image"] == curated.BASE_IMAGE
    container = shared.client.get(f"{path}/environments/sklearn-1.5", params=V, headers=shared.auth).json()
    assert container["properties"]["latestVersion"] == curated.LATEST


def test_the_sdk_list_view_spelling_and_the_latest_query(shared):
    path, _ = _scope(shared)
    listed = shared.client.get(f"{path}/environments/sklearn-1.5/versions", headers=shared.auth,
                               params={**V, "listViewType": "ListViewType.ACTIVE_ONLY",
                                       "$orderBy": "createdtime desc", "$top": "1"})
    assert listed.status_code == 200, listed.text
    assert [v["name"] for v in listed.json()["value"]] == [curated.LATEST]
    archived = shared.client.get(f"{path}/environments", headers=shared.auth,
                                 params={**V, "listViewType": "ArchivedOnly"})
    assert archived.json()["value"] == []


@pytest.mark.parametrize(("rg", "name", "status", "target"), [
    ("elsewhere", "azureml", 404, "registryName"),  # not where discovery said
    ("registry-builtin-azureml", "contoso", 404, "registryName"),
    ("registry-builtin-azureml", "a!", 400, "registryName"),
])
def test_a_registry_not_where_discovery_puts_it_is_not_found(shared, rg, name, status, target):
    path, doc = _scope(shared)
    wrong = (f"/mferp/managementfrontend/subscriptions/{doc['subscriptionId']}/resourceGroups/{rg}"
             f"/providers/Microsoft.MachineLearningServices/registries/{name}/environments")
    got = shared.client.get(wrong, params=V, headers=shared.auth)
    assert got.status_code == status and got.json()["error"]["target"] == target, got.text


@pytest.mark.parametrize(("method", "tail"), [
    ("PUT", "/environments/sklearn-1.5/versions/1"), ("PUT", "/environments/sklearn-1.5"),
    ("PUT", "/environments/mine/versions/1"), ("PUT", "/tempdatarefs/mine/versions/1"), ("POST", "/import"),
])
def test_writes_to_the_builtin_registry_are_refused_and_change_nothing(shared, method, tail):
    path, _ = _scope(shared)
    before = shared.client.get(f"{path}/environments/sklearn-1.5/versions/1", params=V, headers=shared.auth).json()
    got = shared.client.request(method, path + tail, params=V, headers=shared.auth,
                                json={"properties": {"isArchived": True, "image": "python:3.11"}})
    assert got.status_code == 403 and got.json()["error"]["code"] == "AuthorizationFailed", got.text
    after = shared.client.get(f"{path}/environments/sklearn-1.5/versions/1", params=V, headers=shared.auth).json()
    assert after == before


def test_the_data_plane_needs_a_token(shared):
    path, _ = _scope(shared)
    assert shared.client.get(f"{path}/environments", params=V).status_code == 401
    assert shared.client.get(DISCOVERY.format("azureml")).status_code == 401
