"""Where code snapshots and build contexts may point: a blob URL or datastore URI inside the workspace's own
storage, or a 400 naming the field. And each workspace's storage account is its own."""

import re

import pytest

from emulator.domain.ids import WorkspaceRef
from emulator.domain.storage import blob_access, datastores
from emulator.domain.storage.datastores import BlobLocation
from emulator.errors import ValidationFailed

SUB = "00000000-0000-0000-0000-000000000000"
WS = WorkspaceRef(SUB, "amlemu", "amlemu")
ACCOUNT = blob_access.workspace_account(WS)
BASE = f"https://localhost:8443/blob/{ACCOUNT}"
TARGET = "properties.codeUri"


@pytest.mark.parametrize(("uri", "expected"), [
    (f"{BASE}/0a1b2c3d-code/src", BlobLocation(ACCOUNT, "0a1b2c3d-code", "src")),
    (f"https://{ACCOUNT}.blob.localhost:8443/azureml/ExperimentRun/dcid.j/outputs",
     BlobLocation(ACCOUNT, "azureml", "ExperimentRun/dcid.j/outputs")),
    (f"{BASE}/code-1", BlobLocation(ACCOUNT, "code-1", "")),
    (f"{BASE}/code-1/my%20src/a.py?sv=x", BlobLocation(ACCOUNT, "code-1", "my src/a.py")),
    # decoded once, as the blob API decodes: a double-encoded dot is the literal name '%2e%2e', inside
    (f"{BASE}/code-1/%252e%252e/ca", BlobLocation(ACCOUNT, "code-1", "%2e%2e/ca")),
    ("azureml://datastores/workspaceblobstore/paths/LocalUpload/x/src/",
     BlobLocation(ACCOUNT, f"azureml-blobstore-{datastores.workspace_guid(WS.key)}", "LocalUpload/x/src")),
])
def test_asset_uris_inside_the_workspace_storage_resolve(uri, expected):
    assert datastores.resolve_asset_uri(WS, uri, TARGET) == expected


ESCAPES = [
    f"{BASE}/azureml/../../../ca",                     # the finding: out of the container, into the data folder
    f"{BASE}/azureml/%2e%2e/%2e%2e/%2e%2e/ca",
    f"{BASE}/azureml/%2E%2e/%2e%2E/ca",
    f"{BASE}/azureml/a%2F..%2F..%2F..%2Fca",           # an encoded '/' brings its '..' back
    f"{BASE}/azureml/src/./x",
    f"{BASE}/azureml/..\\..\\ca",
    f"{BASE}/azureml/%5c..%5cca",
    f"{BASE}/azureml/src%00/x",
    f"{BASE}/..",                                      # no container at all
    f"{BASE}/%2e%2e/ca",
    f"{BASE}/Azureml_Bad/x",                           # not a container name
    "https://localhost:8443/blob/amlemustore/azureml/src",   # the shared account of earlier versions
    f"https://localhost:8443/blob/{blob_access.workspace_account(WorkspaceRef(SUB, 'other', 'amlemu'))}/azureml/x",
    f"https://localhost:8443/blob/%2e%2e/{ACCOUNT}/x",
    "/var/lib/amlemu/ca",
    "file:///var/lib/amlemu/ca/ca.key",
    "../../ca",
    "C:\\amlemu\\ca",
    "https://example.com/src",
    "azureml://datastores/workspaceblobstore/paths/../../ca",
    "azureml://datastores/workspaceblobstore/paths/a/%2e%2e/../x",
    "azureml://datastores/workspaceblobstore/paths/a\\..\\..\\x",
    f"azureml://subscriptions/{SUB}/resourcegroups/other/workspaces/amlemu/datastores/workspaceblobstore/paths/x",
    "azureml://datastores/otherstore/paths/x",
    "",
]


@pytest.mark.parametrize("uri", ESCAPES)
def test_asset_uris_leaving_the_workspace_storage_are_refused_naming_the_field(uri):
    with pytest.raises(ValidationFailed) as caught:
        datastores.resolve_asset_uri(WS, uri, TARGET)
    assert caught.value.target == TARGET and caught.value.status == 400


@pytest.mark.parametrize("uri", [None, 3, ["x"]])
def test_asset_uris_must_be_strings(uri):
    with pytest.raises(ValidationFailed):
        datastores.resolve_asset_uri(WS, uri, TARGET)


# storage accounts
def test_workspace_accounts_are_valid_names_of_their_own():
    names = ["amlemu", "a-b_c", "ProjectNumberOneTwentyX", "ProjectNumberOneTwentyY", "x" * 33, "abc"]
    refs = [WorkspaceRef(SUB, rg, n) for n in names for rg in ("rg1", "RG2")]
    accounts = [blob_access.workspace_account(r) for r in refs]
    assert all(re.fullmatch(r"[a-z0-9]{16,24}", a) for a in accounts)
    assert len(set(accounts)) == len(refs)  # same 14-letter prefix, same name in two groups: all apart
    # and none is the shared name earlier versions gave them
    assert not set(accounts) & {blob_access.legacy_account(n) for n in names}
    assert blob_access.legacy_account("ProjectNumberOneTwentyX") == blob_access.legacy_account("ProjectNumberOneTwentyY")


def test_a_workspace_account_ignores_the_case_of_its_arm_id():
    assert blob_access.workspace_account(WorkspaceRef(SUB.upper(), "RG", "MyWs")) == \
        blob_access.workspace_account(WorkspaceRef(SUB, "rg", "myws"))


def test_datastores_and_the_workspace_agree_on_the_account():
    assert {d.account for d in datastores.defaults(WS)} == {ACCOUNT}


@pytest.mark.parametrize(("uri", "expected"), [
    ("https://localhost:8443/blob/amlemustore/c-1/src?sv=1", f"https://localhost:8443/blob/{ACCOUNT}/c-1/src?sv=1"),
    ("https://amlemustore.blob.localhost:8443/c-1/src", f"https://{ACCOUNT}.blob.localhost:8443/c-1/src"),
    (f"{BASE}/c-1/src", None),
    ("azureml://datastores/workspaceblobstore/paths/x", None),
])
def test_with_account_moves_blob_urls_off_an_old_account(uri, expected):
    assert blob_access.with_account(uri, "amlemustore", ACCOUNT) == expected
