"""Workspace datastores (ARM) and the host-style blob URLs the SDK builds from them, through TestClient."""

from datetime import UTC, datetime, timedelta
from urllib.parse import parse_qs
from xml.etree import ElementTree as ET

import pytest
from fastapi.testclient import TestClient

from tests.service.test_api import ACCOUNT, API, PROVIDER, WS_PATH, assert_arm_error
from tests.service.test_blobs import Container, md5, storage_error

DATASTORES = f"{WS_PATH}/datastores"
PORT = 8443
# What the SDK sends (operations/_datastore_operations.py, _list_secrets).
SDK_SECRET_BODY = {"expirableSecret": True, "expireAfterHours": 1}


def datastore(client, auth, name: str) -> dict:
    response = client.get(f"{DATASTORES}/{name}", params=API, headers=auth)
    assert response.status_code == 200, response.text
    return response.json()


def list_secrets(client, auth, name: str, body: dict | None = None) -> str:
    response = client.post(f"{DATASTORES}/{name}/listSecrets", params=API, headers=auth,
                           json=SDK_SECRET_BODY if body is None else body)
    assert response.status_code == 200, response.text
    secrets = response.json()
    assert set(secrets) == {"secretsType", "sasToken"} and secrets["secretsType"] == "Sas"
    return secrets["sasToken"]


class HostStyle(Container):
    """A datastore's container as the SDK reaches it: https://<account>.blob.<suffix>/<container>, with the SAS
    from listSecrets."""

    def __init__(self, client, container: str, sas: str):
        self.client, self.path, self.sas = client, f"/{container}", sas


@pytest.fixture
def blob_host(app):
    """A client whose every request carries Host: <account>.blob.localhost:<port>."""
    with TestClient(app, base_url=f"https://{ACCOUNT}.blob.localhost:{PORT}",
                    raise_server_exceptions=False) as host_client:
        yield host_client


@pytest.fixture
def blob_store(client, auth, blob_host) -> HostStyle:
    container = datastore(client, auth, "workspaceblobstore")["properties"]["containerName"]
    return HostStyle(blob_host, container, list_secrets(client, auth, "workspaceblobstore"))


def stored(settings, container: str, blob: str):
    return settings.data_dir / "blobs" / ACCOUNT / container / blob


# ARM
def test_default_blob_datastore_has_azures_shape(client, auth, settings):
    body = datastore(client, auth, "workspaceblobstore")
    workspace_id = client.get(WS_PATH, params=API, headers=auth).json()["properties"]["workspaceId"]
    assert body["id"] == f"{DATASTORES}/workspaceblobstore" and body["name"] == "workspaceblobstore"
    assert body["type"] == f"{PROVIDER}/workspaces/datastores" and body["systemData"]["createdAt"]
    props = body["properties"]
    assert props == {"datastoreType": "AzureBlob", "accountName": ACCOUNT,
                     "containerName": f"azureml-blobstore-{workspace_id}", "endpoint": f"localhost:{PORT}",
                     "protocol": "https", "credentials": {"credentialsType": "AccountKey"}, "isDefault": True,
                     "serviceDataAccessAuthIdentity": "None", "subscriptionId": WS_PATH.split("/")[2],
                     "resourceGroup": "amlemu", "description": None, "tags": {}, "properties": {}}
    # The container exists as soon as the datastore is served, and serving it again changes nothing.
    assert (settings.data_dir / "blobs" / ACCOUNT / props["containerName"]).is_dir()
    assert datastore(client, auth, "WorkspaceBlobStore") == body


def test_artifact_datastore(client, auth, settings):
    props = datastore(client, auth, "workspaceartifactstore")["properties"]
    assert props["containerName"] == "azureml" and props["isDefault"] is False and props["accountName"] == ACCOUNT
    assert (settings.data_dir / "blobs" / ACCOUNT / "azureml").is_dir()


@pytest.mark.parametrize("is_default, names", [
    (None, ["workspaceartifactstore", "workspaceblobstore"]),
    ("true", ["workspaceblobstore"]),
    ("false", ["workspaceartifactstore"]),
])
def test_list_filters_on_is_default(client, auth, settings, is_default, names):
    # As the SDK's get_default() asks: count=30&isDefault=true.
    params = {**API, "count": "30", **({"isDefault": is_default} if is_default else {})}
    response = client.get(DATASTORES, params=params, headers=auth)
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["nextLink"] is None and [d["name"] for d in body["value"]] == names
    for item in body["value"]:
        assert item == datastore(client, auth, item["name"])
        assert (settings.data_dir / "blobs" / ACCOUNT / item["properties"]["containerName"]).is_dir()


def test_list_secrets_mints_an_account_sas_for_the_asked_expiry(client, auth):
    before = datetime.now(UTC)
    query = parse_qs(list_secrets(client, auth, "workspaceblobstore"))
    assert {"sv", "ss", "srt", "sp", "se", "sig"} <= set(query) and "sr" not in query
    expiry = datetime.fromisoformat(query["se"][0].replace("Z", "+00:00"))
    assert before + timedelta(minutes=59) <= expiry <= before + timedelta(hours=1, minutes=1)
    lasting = parse_qs(list_secrets(client, auth, "workspaceblobstore", {}))
    assert datetime.fromisoformat(lasting["se"][0].replace("Z", "+00:00")) > expiry + timedelta(hours=12)


def test_unknown_datastore_is_404_naming_it(client, auth):
    for response in (client.get(f"{DATASTORES}/mystore", params=API, headers=auth),
                     client.post(f"{DATASTORES}/mystore/listSecrets", params=API, headers=auth, json={})):
        error = assert_arm_error(response, 404, "ResourceNotFound", "name")
        assert "'mystore'" in error["message"]
    missing_ws = f"{WS_PATH}-nope/datastores/workspaceblobstore"
    assert_arm_error(client.get(missing_ws, params=API, headers=auth), 404, target="workspaceName")


def test_bad_secret_requests_and_datastore_changes_are_refused(client, auth):
    bad = client.post(f"{DATASTORES}/workspaceblobstore/listSecrets", params=API, headers=auth,
                      json={"expirableSecret": True, "expireAfterHours": -1})
    assert_arm_error(bad, 400, "ValidationError", "expireAfterHours")
    put = client.put(f"{DATASTORES}/mystore", params=API, headers=auth, json={"properties": {}})
    assert "does not support attaching" in assert_arm_error(put, 400, "OperationNotSupported", "name")["message"]
    deleted = client.delete(f"{DATASTORES}/workspaceblobstore", params=API, headers=auth)
    assert_arm_error(deleted, 400, "OperationNotSupported")


def test_datastore_routes_need_a_token(client):
    assert_arm_error(client.get(DATASTORES, params=API), 401)
    assert_arm_error(client.post(f"{DATASTORES}/workspaceblobstore/listSecrets", params=API, json={}), 401)


# host-style blobs
def test_upload_list_download_through_host_style_urls(blob_store, blob_host, settings):
    data = b"a,b\n1,2\n"
    put = blob_store.put("LocalUpload/abc/data/train.csv", data)
    assert put.status_code == 201, put.text
    assert put.request.headers["host"] == f"{ACCOUNT}.blob.localhost:{PORT}"
    assert stored(settings, blob_store.path[1:], "LocalUpload/abc/data/train.csv").read_bytes() == data
    blob_store.put("LocalUpload/abc/data/test.csv", b"x")
    listing = blob_host.get(blob_store.url(query="restype=container&comp=list&prefix=LocalUpload/abc/"))
    assert listing.status_code == 200, listing.text
    names = [b.find("Name").text for b in ET.fromstring(listing.content).iter("Blob")]
    assert names == ["LocalUpload/abc/data/test.csv", "LocalUpload/abc/data/train.csv"]
    head = blob_host.head(blob_store.url("LocalUpload/abc/data/train.csv"))
    assert head.status_code == 200 and head.headers["Content-MD5"] == md5(data)
    got = blob_host.get(blob_store.url("LocalUpload/abc/data/train.csv"))
    assert got.status_code == 200 and got.content == data
    container = blob_host.get(blob_store.url(query="restype=container"))
    assert container.status_code == 200, container.text


def test_path_style_still_serves_the_same_blobs(client, blob_store):
    assert blob_store.put("shared.txt", b"one").status_code == 201
    path_style = f"/blob/{ACCOUNT}{blob_store.path}/shared.txt?{blob_store.sas}"
    assert client.get(path_style).content == b"one"
    assert client.put(path_style, content=b"two", headers={"x-ms-blob-type": "BlockBlob"}).status_code == 201
    assert blob_store.client.get(blob_store.url("shared.txt")).content == b"two"


def test_host_names_are_case_insensitive(app, blob_store):
    assert blob_store.put("a.txt", b"x").status_code == 201
    with TestClient(app, base_url=f"https://{ACCOUNT.upper()}.BLOB.localhost:{PORT}") as upper:
        assert upper.get(blob_store.url("a.txt")).content == b"x"


@pytest.mark.parametrize("mutate", [
    lambda url: url.split("?")[0],  # no SAS at all
    lambda url: url.replace("sig=", "sig=AAAA"),  # forged signature
    lambda url: url.replace("se=", "se=2000"),  # tampered expiry
])
def test_host_style_requests_without_a_valid_sas_are_refused(blob_store, blob_host, settings, mutate):
    response = blob_host.put(mutate(blob_store.url("a.txt")), content=b"abc", headers={"x-ms-blob-type": "BlockBlob"})
    storage_error(response, 403, "AuthenticationFailed")
    storage_error(blob_host.get(mutate(blob_store.url(query="restype=container&comp=list"))), 403,
                  "AuthenticationFailed")
    assert not stored(settings, blob_store.path[1:], "a.txt").exists()


def test_a_datastore_sas_opens_its_workspace_account_only(client, auth, blob_store, blob_host, settings):
    """As Azure's account key: the SDK's code download reads a code version's own container with the
    workspaceblobstore secret. Both datastores share the account, and whoever may list one's secrets may list
    the other's, so the account is the boundary."""
    artifacts = HostStyle(blob_host, "azureml", list_secrets(client, auth, "workspaceartifactstore"))
    code = HostStyle(blob_host, "0a1b2c3d-code", blob_store.sas)
    assert blob_host.put(code.url(query="restype=container")).status_code == 201
    assert code.put("src/a.py", b"x").status_code == 201
    assert blob_host.get(HostStyle(blob_host, "0a1b2c3d-code", artifacts.sas).url("src/a.py")).content == b"x"
    assert stored(settings, "0a1b2c3d-code", "src/a.py").read_bytes() == b"x"
    # Another account's host with this account's SAS is refused too.
    with TestClient(client.app, base_url=f"https://otherstore.blob.localhost:{PORT}",
                    raise_server_exceptions=False) as other:
        storage_error(other.get(f"/azureml/a.txt?{artifacts.sas}"), 403, "AuthenticationFailed")


def test_host_style_errors_are_storage_xml(app, blob_store, blob_host):
    storage_error(blob_host.get(blob_store.url("missing.txt")), 404, "BlobNotFound")
    with TestClient(app, base_url=f"https://ab.blob.localhost:{PORT}", raise_server_exceptions=False) as short:
        storage_error(short.get(f"/azureml/a.txt?{blob_store.sas}"), 400, "InvalidResourceName")


def test_a_blob_host_never_reaches_arm(client, auth, blob_host):
    assert client.get(DATASTORES, params=API, headers=auth).status_code == 200
    # The same path on the storage host is a blob request (container 'subscriptions'), refused in storage XML.
    storage_error(blob_host.get(DATASTORES, params=API, headers=auth), 403, "AuthenticationFailed")
