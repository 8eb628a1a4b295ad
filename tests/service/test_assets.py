"""Code and environment assets (ARM), driven in-process through TestClient."""

import pytest

from tests.service.test_api import ACCOUNT, API, WS_PATH, assert_arm_error

CODES = f"{WS_PATH}/codes"
ENVIRONMENTS = f"{WS_PATH}/environments"
HASH = "a" * 64


# code assets
def code_body(uri: str = f"https://localhost:8443/blob/{ACCOUNT}/code-c/src", content_hash: str = HASH) -> dict:
    return {"properties": {"codeUri": uri, "isAnonymous": True,
                           "properties": {"hash_sha256": content_hash, "hash_version": 202208}}}


def test_code_version_put_get_and_hash_lookup_across_names(client, auth):
    response = client.put(f"{CODES}/first-uuid/versions/1", params=API, headers=auth, json=code_body())
    assert response.status_code == 201, response.text
    body = response.json()
    assert body["id"] == f"{CODES}/first-uuid/versions/1" and body["name"] == "1"
    assert body["properties"]["codeUri"].endswith("/src")
    assert body["properties"]["properties"] == {"hash_sha256": HASH, "hash_version": "202208"}
    assert client.get(f"{CODES}/first-uuid/versions/1", params=API, headers=auth).json() == body
    # The SDK asks under a fresh name every time: the hash must match across all code assets.
    found = client.get(f"{CODES}/second-uuid/versions", headers=auth,
                       params={**API, "hash": HASH, "hashVersion": "202208"})
    assert found.status_code == 200 and [v["id"] for v in found.json()["value"]] == [body["id"]]
    missed = client.get(f"{CODES}/second-uuid/versions", headers=auth,
                        params={**API, "hash": "b" * 64, "hashVersion": "202208"})
    assert missed.json() == {"value": [], "nextLink": None}


def test_code_version_is_idempotent_but_immutable(client, auth):
    assert client.put(f"{CODES}/c/versions/1", params=API, headers=auth, json=code_body()).status_code == 201
    assert client.put(f"{CODES}/c/versions/1", params=API, headers=auth, json=code_body()).status_code == 200
    changed = client.put(f"{CODES}/c/versions/1", params=API, headers=auth, json=code_body(uri=f"https://localhost:8443/blob/{ACCOUNT}/code-c/other"))
    assert_arm_error(changed, 409, target="properties.codeUri")
    got = client.get(f"{CODES}/c/versions/1", params=API, headers=auth).json()
    assert got["properties"]["codeUri"] == code_body()["properties"]["codeUri"]


def test_missing_code_version_is_404(client, auth):
    assert_arm_error(client.get(f"{CODES}/nope/versions/1", params=API, headers=auth), 404, "ResourceNotFound")
    assert_arm_error(client.get(f"{CODES}/nope", params=API, headers=auth), 404, "ResourceNotFound")


def test_asset_routes_need_a_token(client):
    assert_arm_error(client.get(f"{CODES}/c/versions/1", params=API), 401)
    assert_arm_error(client.post(f"{CODES}/c/versions/1/startPendingUpload", params=API, json={}), 401)


# environments
def env_body(**props) -> dict:
    return {"properties": {"image": "python:3.11-slim", "isAnonymous": False, "isArchived": False, **props}}


def put_env(client, auth, name: str, version: str, body: dict, expected: int = 201) -> dict:
    response = client.put(f"{ENVIRONMENTS}/{name}/versions/{version}", params=API, headers=auth, json=body)
    assert response.status_code == expected, response.text
    return response.json()


def test_environment_versions_list_latest_and_container(client, auth):
    put_env(client, auth, "myenv", "1", env_body())
    second = put_env(client, auth, "myenv", "2", env_body(condaFile="dependencies:\n  - python=3.11\n",
                                                          description="with conda"))
    assert second["properties"]["environmentType"] == "UserCreated"
    assert second["properties"]["osType"] == "Linux" and second["properties"]["description"] == "with conda"
    latest = client.get(f"{ENVIRONMENTS}/myenv/versions", headers=auth,
                        params={**API, "$orderBy": "createdtime desc", "$top": "1"})
    assert [v["name"] for v in latest.json()["value"]] == ["2"]
    listed = client.get(f"{ENVIRONMENTS}/myenv/versions", params=API, headers=auth).json()["value"]
    assert {v["name"] for v in listed} == {"1", "2"}
    container = client.get(f"{ENVIRONMENTS}/MyEnv", params=API, headers=auth)
    assert container.status_code == 200, container.text
    assert container.json()["properties"]["latestVersion"] == "2"
    assert container.json()["properties"]["nextVersion"] == "3"
    names = [c["name"] for c in client.get(ENVIRONMENTS, params=API, headers=auth).json()["value"]]
    assert names == ["myenv"]


def test_environment_same_version_different_image_conflicts(client, auth):
    put_env(client, auth, "e", "1", env_body())
    put_env(client, auth, "e", "1", env_body(description="same spec, new description"), expected=200)
    assert_arm_error(client.put(f"{ENVIRONMENTS}/e/versions/1", params=API, headers=auth,
                                json=env_body(image="python:3.12-slim")), 409, target="properties.image")


def test_build_context_environment(client, auth):
    context = f"https://localhost:8443/blob/{ACCOUNT}/ctx-1/ctx"
    got = put_env(client, auth, "built", "1", {"properties": {"build": {"contextUri": context}}})
    assert got["properties"]["build"] == {"contextUri": context,
                                          "dockerfilePath": "Dockerfile"}


BAD_ENVIRONMENTS = [
    ({}, "properties"),
    ({"properties": "python"}, "properties"),
    ({"properties": {}}, "properties.image"),
    ({"properties": {"image": "Python:3.11"}}, "properties.image"),
    ({"properties": {"image": 3}}, "properties.image"),
    ({"properties": {"image": "python:3.11", "build": {"contextUri": "https://x/c"}}}, "properties.image"),
    ({"properties": {"build": {"dockerfilePath": "Dockerfile"}}}, "properties.build.contextUri"),
    ({"properties": {"build": "ctx"}}, "properties.build"),
    ({"properties": {"image": "python:3.11", "condaFile": 5}}, "properties.condaFile"),
    ({"properties": {"image": "python:3.11", "osType": "Plan9"}}, "properties.osType"),
    ({"properties": {"image": "python:3.11", "tags": {"a": ["b"]}}}, "properties.tags.a"),
    ({"properties": {"image": "python:3.11", "isAnonymous": "yes"}}, "properties.isAnonymous"),
    ({"properties": {"image": "python:3.11", "description": 7}}, "properties.description"),
]


def _asset_rows(api) -> list[tuple]:
    from emulator.store.tables import AssetVersion

    with api.app.state.context.store.transaction() as repo:
        return [(r.key, r.body) for r in repo.session.query(AssetVersion).all()]


@pytest.mark.parametrize(("body", "target"), BAD_ENVIRONMENTS)
def test_malformed_environment_is_400_naming_the_field_and_changes_nothing(shared, body, target):
    before = _asset_rows(shared)
    response = shared.client.put(f"{ENVIRONMENTS}/bad/versions/1", params=API, headers=shared.auth, json=body)
    assert_arm_error(response, 400, target=target)
    assert _asset_rows(shared) == before


@pytest.mark.parametrize(("path", "body", "params", "target"), [
    (f"{CODES}/c/versions/1", {"properties": {}}, {}, "properties.codeUri"),
    (f"{CODES}/c/versions/1", {"properties": {"codeUri": ""}}, {}, "properties.codeUri"),
    (f"{CODES}/c/versions/1", {"properties": {"codeUri": "u", "properties": {"h": None}}}, {},
     "properties.properties.h"),
    (f"{CODES}/-bad/versions/1", code_body(), {}, "name"),
    (f"{CODES}/c/versions/-1", code_body(), {}, "version"),
    (f"{ENVIRONMENTS}/e/versions/1", "not an object", {}, None),
    (f"{CODES}/c/versions/1/startPendingUpload", {"pendingUploadType": "Bogus"}, {}, "pendingUploadType"),
])
def test_bad_asset_requests_are_400_and_change_nothing(shared, path, body, params, target):
    before = _asset_rows(shared)
    method = shared.client.post if path.endswith("startPendingUpload") else shared.client.put
    response = method(path, params={**API, **params}, headers=shared.auth, json=body)
    assert_arm_error(response, 400, target=target)
    assert _asset_rows(shared) == before


@pytest.mark.parametrize(("params", "target"), [
    ({"$orderBy": "name"}, "$orderBy"), ({"$top": "0"}, "$top"), ({"$top": "x"}, "$top"),
    ({"listViewType": "Some"}, "listViewType")])
def test_bad_list_queries_are_400(shared, params, target):
    response = shared.client.get(f"{ENVIRONMENTS}/e/versions", params={**API, **params}, headers=shared.auth)
    assert_arm_error(response, 400, target=target)


def test_routes_match_case_insensitively(client, auth):
    put_env(client, auth, "CaseEnv", "1", env_body())
    path = f"{WS_PATH}/ENVIRONMENTS/CaseEnv/VERSIONS/1".replace("/providers/", "/PROVIDERS/")
    response = client.get(path, params=API, headers=auth)
    assert response.status_code == 200, response.text
    assert response.json()["id"].endswith("/environments/CaseEnv/versions/1")
