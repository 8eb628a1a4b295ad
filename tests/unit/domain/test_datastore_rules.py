"""A workspace's default datastores and the azureml:// URIs that point into them."""

from datetime import timedelta

import pytest

from emulator.domain.ids import WorkspaceRef
from emulator.domain.storage import blob_access, datastores
from emulator.domain.storage.datastores import BlobLocation
from emulator.errors import NotFound, ValidationFailed

SUB = "00000000-0000-0000-0000-000000000000"
WS = WorkspaceRef(SUB, "rg", "My-Workspace")
ACCOUNT = "myworksp29e9e9d31e2edca2"  # a stem of the name, a hash of the lower-cased ARM id
BLOB_CONTAINER = f"azureml-blobstore-{datastores.workspace_guid(WS.key)}"
LONG = f"azureml://subscriptions/{SUB}/resourcegroups/rg/workspaces/My-Workspace/datastores"


def test_defaults_are_azures_two_blob_datastores_on_the_workspace_account():
    stores = {s.name: s for s in datastores.defaults(WS)}
    assert set(stores) == {"workspaceblobstore", "workspaceartifactstore"}
    assert stores["workspaceblobstore"].container == BLOB_CONTAINER and stores["workspaceblobstore"].is_default
    assert stores["workspaceartifactstore"].container == "azureml"
    assert not stores["workspaceartifactstore"].is_default
    assert {s.account for s in stores.values()} == {blob_access.workspace_account(WS)} == {ACCOUNT}
    for store in stores.values():  # names the blob store accepts
        assert blob_access.container_name(store.container) and blob_access.account_name(store.account)


def test_workspace_guid_is_stable_and_ignores_case():
    assert datastores.workspace_guid(WS.key) == datastores.workspace_guid(WS.arm_id.upper())
    assert datastores.workspace_guid(WS.key) != datastores.workspace_guid(WorkspaceRef(SUB, "rg", "other").key)


def test_listed_filters_on_is_default():
    assert [s.name for s in datastores.listed(WS, True)] == ["workspaceblobstore"]
    assert [s.name for s in datastores.listed(WS, False)] == ["workspaceartifactstore"]
    assert len(datastores.listed(WS)) == 2


def test_get_matches_names_case_insensitively_and_names_an_unknown_one():
    assert datastores.get(WS, "WorkspaceBlobStore").name == "workspaceblobstore"
    with pytest.raises(NotFound, match="'mystore'") as caught:
        datastores.get(WS, "mystore")
    assert caught.value.target == "name"


@pytest.mark.parametrize("uri, expected", [
    ("azureml://datastores/workspaceblobstore/paths/LocalUpload/abc/data/",
     BlobLocation(ACCOUNT, BLOB_CONTAINER, "LocalUpload/abc/data")),
    ("azureml://datastores/workspaceblobstore/paths/data/train.csv",
     BlobLocation(ACCOUNT, BLOB_CONTAINER, "data/train.csv")),
    ("azureml://datastores/workspaceartifactstore/paths/ExperimentRun/dcid.x/outputs",
     BlobLocation(ACCOUNT, "azureml", "ExperimentRun/dcid.x/outputs")),
    ("azureml://datastores/workspaceblobstore/paths/", BlobLocation(ACCOUNT, BLOB_CONTAINER, "")),
    (f"{LONG}/workspaceblobstore/paths/data/train.csv", BlobLocation(ACCOUNT, BLOB_CONTAINER, "data/train.csv")),
    (f"azureml://subscriptions/{SUB}/resourceGroups/RG/workspaces/my-workspace/datastores/workspaceblobstore"
     "/paths/a b/c.txt", BlobLocation(ACCOUNT, BLOB_CONTAINER, "a b/c.txt")),
], ids=["short folder", "short file", "artifact store", "whole datastore", "long", "long, other casing"])
def test_resolve_uri(uri, expected):
    assert datastores.resolve_uri(WS, uri, "inputs.data.uri") == expected


@pytest.mark.parametrize("uri, message", [
    ("azureml://datastores/workspaceblobstore", "must be an azureml datastore URI"),
    ("azureml://datastores/workspaceblobstore/data/x", "must be an azureml datastore URI"),
    ("https://acct.blob.core.windows.net/c/x", "must be an azureml datastore URI"),
    ("azureml://datastores//paths/x", "must be an azureml datastore URI"),
    ("azureml://datastores/mystore/paths/x", "Datastore 'mystore' was not found"),
    ("azureml://datastores/workspaceblobstore/paths/a/../../etc/passwd", "Invalid blob name"),
    ("azureml://datastores/workspaceblobstore/paths/a//b", "Invalid blob name"),
    (f"azureml://subscriptions/{SUB}/resourcegroups/rg/workspaces/other/datastores/workspaceblobstore/paths/x",
     "names workspace 'other'"),
    (None, "must be a string"),
    (42, "must be a string"),
], ids=["no paths", "no paths segment", "not azureml", "empty datastore", "unknown datastore", "dot-dot",
        "empty segment", "other workspace", "null", "number"])
def test_bad_uris_name_the_field(uri, message):
    with pytest.raises(ValidationFailed, match=message) as caught:
        datastores.resolve_uri(WS, uri, "inputs.data.uri")
    assert caught.value.target == "inputs.data.uri"
    assert caught.value.message.startswith("inputs.data.uri")


def test_locate_a_datastore_name_and_path():
    assert datastores.locate(WS, "workspaceblobstore", "/a/b/", "path") == BlobLocation(ACCOUNT, BLOB_CONTAINER, "a/b")
    with pytest.raises(ValidationFailed) as caught:
        datastores.locate(WS, "nope", "a", "inputs.x.datastore")
    assert caught.value.target == "inputs.x.datastore"


@pytest.mark.parametrize("body, lifetime", [
    ({"expirableSecret": True, "expireAfterHours": 1}, timedelta(hours=1)),
    ({"expirableSecret": True, "expireAfterHours": 5}, timedelta(hours=5)),
    ({"expirableSecret": False, "expireAfterHours": 5}, blob_access.SAS_LIFETIME),
    ({"expirableSecret": True}, blob_access.SAS_LIFETIME),
    ({}, blob_access.SAS_LIFETIME),
    (None, blob_access.SAS_LIFETIME),
])
def test_secret_lifetime_follows_the_sdks_expiry_request(body, lifetime):
    assert datastores.secret_lifetime(body) == lifetime


@pytest.mark.parametrize("body, target", [
    ({"expirableSecret": "yes"}, "expirableSecret"),
    ({"expirableSecret": True, "expireAfterHours": 0}, "expireAfterHours"),
    ({"expirableSecret": True, "expireAfterHours": 1.5}, "expireAfterHours"),
    ({"expirableSecret": True, "expireAfterHours": True}, "expireAfterHours"),
    ({"expirableSecret": True, "expireAfterHours": 10 ** 12}, "expireAfterHours"),
    ([1], "body"),
])
def test_secret_lifetime_refuses_bad_bodies(body, target):
    with pytest.raises(ValidationFailed) as caught:
        datastores.secret_lifetime(body)
    assert caught.value.target == target
