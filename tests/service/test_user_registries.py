"""A user's registries in-process: ARM create, read, list, delete; discovery; models, environments and data in
them (uploaded to the registry's own storage); share from a workspace; jobs in a workspace naming a registry's
environment; bad input refused naming the field, with nothing created."""

import re

import pytest

from emulator.domain.jobs import command_job
from emulator.domain.registries.ids import RegistryRef
from emulator.domain.storage import blob_access, datastores
from emulator.store.tables import AssetVersion, Job, Registry
from tests.service.test_api import API, RG_PATH, SUB, WS_PATH, assert_arm_error
from tests.service.test_assets import env_body
from tests.service.test_data import REF as WS_REF
from tests.service.test_jobs import JOBS, job_body, put_job, ready  # noqa: F401 (fixture)
from tests.service.test_models import model_body

REGISTRIES = f"{RG_PATH}/registries"
DP = {"api-version": "2021-10-01-dataplanepreview"}
DISCOVERY = "/registrymanagement/v1.0/registries/{}/discovery"
REG = RegistryRef(SUB, "amlemu", "shared-reg")
ACCOUNT = blob_access.registry_account(REG)
# A registry's operations are polled under its own region.
OP_URL = re.compile(rf"^https://localhost:8443/subscriptions/{SUB}/providers/Microsoft.MachineLearningServices"
                    r"/locations/eastus/computeOperationsStatus/[0-9a-f-]{36}\?api-version=")
PLANE = f"/mferp/managementfrontend{REG.arm_id}"


def registry_body(location: str = "eastus", *regions: str, **extra) -> dict:
    """As SDK 1.35's registries.begin_create sends it."""
    details = [{"acrDetails": [], "location": r, "storageAccountDetails": []} for r in (location, *regions)]
    return {"location": location, "identity": {"type": "SystemAssigned"}, "tags": {},
            "properties": {"regionDetails": details, "managedResourceGroupTags": {}}, **extra}


def put_registry(client, auth, name: str = REG.name, body: dict | None = None, expected: int = 201,
                 rg_path: str = RG_PATH) -> dict:
    response = client.put(f"{rg_path}/registries/{name}", params=API, headers=auth, json=body or registry_body())
    assert response.status_code == expected, response.text
    return response


def _rows(app, table) -> list:
    with app.state.context.store.transaction() as repo:
        return sorted(r.key for r in repo.session.query(table).all())


def upload(settings, name: str, content: str = "weights") -> str:
    """A file in a fresh container of the registry's storage, as tempdatarefs then the SDK's upload leave it;
    the container's URL."""
    container = "up-" + name.replace(".", "-")
    folder = settings.data_dir / "blobs" / ACCOUNT / container
    folder.mkdir(parents=True)
    (folder / name).write_text(content)
    return f"https://{ACCOUNT}.blob.localhost:8443/{container}"


def test_a_registry_through_arm_create_get_list_update_delete(client, auth):
    response = put_registry(client, auth, body=registry_body("eastus", "westus", tags={"team": "ml"}))
    assert OP_URL.match(response.headers["Azure-AsyncOperation"]) and response.headers["Retry-After"] == "1"
    assert client.get(response.headers["Azure-AsyncOperation"], headers=auth).json()["status"] == "Succeeded"
    body = client.get(f"{REGISTRIES}/{REG.name}", params=API, headers=auth).json()
    assert body["id"] == REG.arm_id and body["type"] == "Microsoft.MachineLearningServices/registries"
    assert body["location"] == "eastus" and body["tags"] == {"team": "ml"}
    regions = body["properties"]["regionDetails"]
    assert [r["location"] for r in regions] == ["eastus", "westus"]
    assert regions[0]["storageAccountDetails"][0]["systemCreatedStorageAccount"]["storageAccountName"] == ACCOUNT
    assert body["properties"]["discoveryUrl"].endswith(f"/registrymanagement/v1.0/registries/{REG.name}/discovery")
    in_group = client.get(REGISTRIES, params=API, headers=auth).json()["value"]
    in_sub = client.get(f"/subscriptions/{SUB}/providers/Microsoft.MachineLearningServices/registries",
                        params=API, headers=auth).json()["value"]
    assert [r["name"] for r in in_group] == [r["name"] for r in in_sub] == [REG.name]
    put_registry(client, auth, body=registry_body("eastus", tags={"team": "ops"}), expected=200)
    assert client.get(f"{REGISTRIES}/{REG.name}", params=API, headers=auth).json()["tags"] == {"team": "ops"}
    doc = client.get(DISCOVERY.format(REG.name.upper()), headers=auth).json()
    assert (doc["registryName"], doc["resourceGroup"], doc["regions"]) == (REG.name, "amlemu", ["eastus"])
    deleted = client.delete(f"{REGISTRIES}/{REG.name}", params=API, headers=auth)
    assert deleted.status_code == 202 and OP_URL.match(deleted.headers["Azure-AsyncOperation"])
    assert_arm_error(client.get(f"{REGISTRIES}/{REG.name}", params=API, headers=auth), 404, target="registryName")
    assert_arm_error(client.get(DISCOVERY.format(REG.name), headers=auth), 404, target="registryName")
    assert client.delete(f"{REGISTRIES}/{REG.name}", params=API, headers=auth).status_code == 204


@pytest.mark.parametrize(("name", "body", "status", "target"), [
    ("a!", registry_body(), 400, "registryName"),
    ("ab", registry_body(), 400, "registryName"),
    ("azureml", registry_body(), 409, "registryName"),  # Azure ML's own
    ("AzureML", registry_body(), 409, "registryName"),
    ("fine-name", {"properties": {}}, 400, "location"),
    ("fine-name", registry_body("eastus", "East US"), 400, "properties.regionDetails[1].location"),
    ("fine-name", registry_body("nowhere!"), 400, "location"),
])
def test_bad_registries_are_refused_naming_the_field_and_nothing_is_made(app, client, auth, name, body, status,
                                                                          target):
    assert_arm_error(put_registry(client, auth, name, body, expected=status), status, target=target)
    assert _rows(app, Registry) == []


def test_registry_names_are_global_and_the_primary_region_stays(app, client, auth):
    put_registry(client, auth)
    other_group = f"/subscriptions/{SUB}/resourceGroups/other/providers/Microsoft.MachineLearningServices"
    assert_arm_error(put_registry(client, auth, REG.name.upper(), expected=409, rg_path=other_group), 409,
                     target="registryName")
    assert_arm_error(put_registry(client, auth, body=registry_body("westus"), expected=400), 400, target="location")
    assert _rows(app, Registry) == [REG.key]
    assert client.get(f"{REGISTRIES}/{REG.name}", params=API, headers=auth).json()["location"] == "eastus"


def test_models_environments_and_data_in_a_registry(client, auth, settings):
    put_registry(client, auth)
    ref = client.put(f"{PLANE}/tempdatarefs/m/versions/1", params=DP, headers=auth,
                     json={"assetId": REG.asset_id("models", "m", "1"),
                           "temporaryDataReferenceType": "TemporaryBlobReference"}).json()
    sas_uri = ref["blobReferenceForConsumption"]["credential"]["sasUri"]
    assert sas_uri.startswith(f"https://{ACCOUNT}.blob.localhost:8443/") and "sig=" in sas_uri
    container = sas_uri.split("?")[0].rsplit("/", 1)[1]
    (settings.data_dir / "blobs" / ACCOUNT / container / "model.pkl").write_text("weights")
    uri = f"https://{ACCOUNT}.blob.localhost:8443/{container}/model.pkl"
    made = client.put(f"{PLANE}/models/m/versions/1", params=DP, headers=auth, json=model_body(uri))
    assert made.status_code == 201, made.text
    assert made.json()["id"] == "azureml://registries/shared-reg/models/m/versions/1"
    got = client.get(f"{PLANE}/models/m/versions/1", params=DP, headers=auth).json()
    assert got["properties"]["modelUri"] == uri
    latest = client.get(f"{PLANE}/models/m/versions", params={**DP, "$orderBy": "createdtime desc", "$top": "1"},
                        headers=auth).json()["value"]
    assert [v["name"] for v in latest] == ["1"]
    env = client.put(f"{PLANE}/environments/e/versions/1", params=DP, headers=auth, json=env_body())
    assert env.status_code == 201 and env.json()["properties"]["environmentType"] == "UserCreated"
    folder = upload(settings, "rows.csv")
    data = client.put(f"{PLANE}/data/d/versions/1", params=DP, headers=auth,
                      json={"properties": {"dataType": "uri_folder", "dataUri": folder}})
    assert data.status_code == 201, data.text
    listed = client.get(f"{PLANE}/data", params={**DP, "listViewType": "ListViewType.ACTIVE_ONLY"},
                        headers=auth).json()["value"]
    assert [c["name"] for c in listed] == ["d"]
    download = client.post(f"{PLANE}/datarefs/m/versions/1", params=DP, headers=auth,
                           json={"assetId": REG.asset_id("models", "m", "1"), "blobUri": uri})
    assert download.json()["blobReferenceForConsumption"]["credential"]["sasUri"].startswith(
        f"https://{ACCOUNT}.blob.localhost:8443/{container}?")


@pytest.mark.parametrize(("path", "body", "status", "target"), [
    ("models/m/versions/1", model_body("azureml://datastores/workspaceblobstore/paths/m"), 400,
     "properties.modelUri"),  # a registry has no datastores
    ("models/m/versions/1", model_body(f"https://localhost:8443/blob/{ACCOUNT}/nothing-here/m.pkl"), 400,
     "properties.modelUri"),
    ("models/m/versions/1", model_body("https://localhost:8443/blob/someoneelse1234/c/m.pkl"), 400,
     "properties.modelUri"),
    ("data/d/versions/1", {"properties": {"dataType": "uri_file", "dataUri": f"https://localhost:8443/blob/{ACCOUNT}/"
                                          "up-rows-csv"}}, 400, "properties.dataUri"),  # a folder, not a file
    ("environments/bad!/versions/1", env_body(), 400, "name"),
    ("components/c/versions/1", {"properties": {}}, 400, "properties.componentSpec"),
    ("components/c/versions/1", {"properties": {"componentSpec": {  # a workspace's environment, not a registry's
        "type": "command", "command": "echo", "environment": f"azureml:{WS_PATH}/environments/e/versions/1"}}}, 400,
     "properties.componentSpec.environment"),
])
def test_bad_registry_assets_are_refused_and_nothing_is_stored(app, client, auth, settings, path, body, status,
                                                               target):
    put_registry(client, auth)
    upload(settings, "rows.csv")
    assert_arm_error(client.put(f"{PLANE}/{path}", params=DP, headers=auth, json=body), status, target=target)
    assert _rows(app, AssetVersion) == []


def test_unknown_registries_and_assets_are_told_apart(client, auth):
    put_registry(client, auth)
    assert_arm_error(client.get(DISCOVERY.format("contoso"), headers=auth), 404, target="registryName")
    assert_arm_error(client.get(f"{PLANE}/models/nope/versions/1", params=DP, headers=auth), 404, target="version")
    assert_arm_error(client.get(f"{PLANE}/models/nope", params=DP, headers=auth), 404, target="name")
    assert_arm_error(client.get(f"{PLANE}/components/nope/versions/1", params=DP, headers=auth), 404, target="version")
    elsewhere = PLANE.replace("/resourceGroups/amlemu/", "/resourceGroups/other/")
    assert_arm_error(client.get(f"{elsewhere}/models", params=DP, headers=auth), 404, target="registryName")


def _workspace_model(settings, client, auth) -> None:
    store = next(d for d in datastores.defaults(WS_REF) if d.is_default)
    folder = settings.data_dir / "blobs" / store.account / store.container / "models" / "clf"
    folder.mkdir(parents=True)
    (folder / "model.pkl").write_text("weights")
    uri = "azureml://datastores/workspaceblobstore/paths/models/clf"
    assert client.put(f"{WS_PATH}/models/clf/versions/3", params=API, headers=auth,
                      json=model_body(uri)).status_code == 201


def _share(client, auth, kind: str, name: str, version: str, destination: str) -> object:
    source = f"azureml://locations/local/workspaces/{datastores.workspace_guid(WS_REF.key)}/{kind}/{name}/versions/{version}"
    return client.post(f"{PLANE}/import", params=DP, headers=auth, json={"properties": {
        "referenceType": "Id", "destinationName": destination, "destinationVersion": "1", "sourceAssetId": source}})


def test_share_copies_a_workspace_model_and_environment_into_the_registry(client, auth, settings):
    put_registry(client, auth)
    _workspace_model(settings, client, auth)
    assert client.put(f"{WS_PATH}/environments/ws-env/versions/1", params=API, headers=auth,
                      json=env_body()).status_code == 201
    started = _share(client, auth, "models", "clf", "3", "clf-shared")
    assert started.status_code == 202, started.text
    done = client.get(started.headers["Location"], headers=auth)
    assert done.status_code == 200 and done.content == b""  # no body: the SDK then reads the version
    model = client.get(f"{PLANE}/models/clf-shared/versions/1", params=DP, headers=auth).json()
    copied = model["properties"]["modelUri"]
    assert copied.startswith(f"https://{ACCOUNT}.blob.localhost:8443/") and copied.endswith("/clf/")
    path = settings.data_dir / "blobs" / ACCOUNT / copied.split(":8443/", 1)[1]
    assert (path / "model.pkl").read_text() == "weights"
    assert _share(client, auth, "environments", "ws-env", "1", "env-shared").status_code == 202
    env = client.get(f"{PLANE}/environments/env-shared/versions/1", params=DP, headers=auth).json()
    assert env["properties"]["image"] == "python:3.11-slim"
    assert_arm_error(_share(client, auth, "models", "clf", "3", "clf-shared"), 409,
                     target="properties.destinationVersion")
    assert_arm_error(_share(client, auth, "models", "clf", "9", "other"), 400, target="properties.sourceAssetId")


@pytest.mark.usefixtures("ready")
def test_a_job_runs_in_a_registry_environment_and_deleting_the_registry_takes_its_assets(app, client, auth):
    put_registry(client, auth)
    assert client.put(f"{PLANE}/environments/e/versions/1", params=DP, headers=auth,
                      json=env_body()).status_code == 201
    for name, given in (("by-version", REG.asset_id("environments", "e", "1")),
                        ("by-label", "azureml://registries/shared-reg/environments/e/labels/latest")):
        shown = put_job(client, auth, name, job_body(environmentId=given))
        assert shown["properties"]["environmentId"] == given  # as given, nothing of the emulator's own
        assert command_job.RESOLVED_ENVIRONMENT not in shown["properties"]
        with app.state.context.store.transaction() as repo:
            job = repo.job(f"{JOBS}/{name}")
            assert command_job.environment_key(job.body) == f"{REG.child_id('environments', 'e')}/versions/1".lower()
    for given in ("azureml://registries/shared-reg/environments/e/versions/7",
                  "azureml://registries/contoso/environments/e/versions/1",
                  "azureml://registries/shared-reg/environments/e/labels/prod"):
        refused = client.put(f"{JOBS}/refused", params=API, headers=auth, json=job_body(environmentId=given))
        assert_arm_error(refused, 400, target="properties.environmentId")
    jobs_before = _rows(app, Job)
    assert client.delete(f"{REGISTRIES}/{REG.name}", params=API, headers=auth).status_code == 202
    assert [k for k in _rows(app, AssetVersion) if "/registries/" in k] == []
    assert _rows(app, Job) == jobs_before


def test_the_builtin_registry_stays_read_only_for_uploads_and_imports(client, auth):
    builtin = "/mferp/managementfrontend/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/" \
              "registry-builtin-azureml/providers/Microsoft.MachineLearningServices/registries/azureml"
    for method, tail in (("PUT", "/tempdatarefs/m/versions/1"), ("POST", "/import"), ("PUT", "/models/m/versions/1")):
        got = client.request(method, builtin + tail, params=DP, headers=auth, json={"properties": {}})
        assert_arm_error(got, 403, code="AuthorizationFailed")


def test_an_online_deployment_serves_a_registry_model_pinned_when_it_is_made(app, client, auth, settings):
    from emulator.domain.ids import WorkspaceRef
    from emulator.services import endpoints
    from tests.service.test_online_endpoints import ENDPOINTS, deployment_body, endpoint_body, setup_assets

    setup_assets(app, client, auth)
    assert client.put(f"{ENDPOINTS}/ep-reg", params=API, headers=auth, json=endpoint_body()).status_code == 201
    put_registry(client, auth)
    folder = upload(settings, "weights.txt")
    assert client.put(f"{PLANE}/models/m/versions/4", params=DP, headers=auth,
                      json=model_body(folder)).status_code == 201
    refused = client.put(f"{ENDPOINTS}/ep-reg/deployments/blue", params=API, headers=auth,
                         json=deployment_body(model="azureml://registries/shared-reg/models/nope/labels/latest"))
    assert_arm_error(refused, 400, target="properties.model")
    latest = "azureml://registries/shared-reg/models/m/labels/latest"
    made = client.put(f"{ENDPOINTS}/ep-reg/deployments/blue", params=API, headers=auth,
                      json=deployment_body(model=latest))
    assert made.status_code == 201, made.text
    assert made.json()["properties"]["model"] == latest
    with app.state.context.store.transaction() as repo:
        row = repo.online_deployment(f"{ENDPOINTS}/ep-reg/deployments/blue")
        assert row.body["refs"]["model"] == {"kind": "models", "name": "m", "version": "4", "registry": "shared-reg"}
        ws = WorkspaceRef(SUB, "amlemu", "amlemu")
        found = endpoints.resolve(repo, ws, row.body)
        assert endpoints.model_path(ws, found.model) == f"blobs/{ACCOUNT}/up-weights-txt"
