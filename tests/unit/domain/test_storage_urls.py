"""The storage URLs the emulator hands out, against the parsers of the SDK that reads them back, and the scope
of the signatures that open them."""

import re
from datetime import UTC, datetime, timedelta
from urllib.parse import parse_qsl

import pytest

from emulator.domain.ids import WorkspaceRef
from emulator.domain.storage import blob_access, datastores
from emulator.domain.storage.datastores import BlobLocation
from emulator.errors import Forbidden, ValidationFailed

WS = WorkspaceRef("00000000-0000-0000-0000-000000000000", "amlemu", "amlemu")
ACCOUNT = blob_access.workspace_account(WS)
OTHER = blob_access.workspace_account(WorkspaceRef(WS.subscription, "other", "amlemu"))
SECRET = b"s" * 32
NOW = datetime(2025, 1, 1, tzinfo=UTC)
# azure-ai-ml 1.35.2, operations/_code_operations.py CodeOperations.download: the only code path it downloads.
SDK_CODE_PATH = re.compile(r"https://(?P<account_name>.+)\.blob\.core\.windows\.net"
                           r"(:[0-9]+)?/(?P<container_name>.+)/(?P<blob_name>.*)")


def _query(sas: str) -> dict[str, str]:
    return dict(parse_qsl(sas))


def test_a_code_version_path_parses_as_the_sdk_download_reads_it():
    # The SDK names the version urljoin(blobUri, "<container>/<folder>"): the container's URL plus the folder.
    path = blob_access.azure_container_url(ACCOUNT, "0a1b-code") + "/src"
    match = SDK_CODE_PATH.match(path)
    assert match and (match["account_name"], match["container_name"], match["blob_name"]) == \
        (ACCOUNT, "0a1b-code", "src")


def test_a_code_version_path_resolves_to_the_workspace_account():
    path = blob_access.azure_container_url(ACCOUNT, "0a1b-code") + "/src/train.py"
    assert datastores.resolve_asset_uri(WS, path, "properties.codeUri") == \
        BlobLocation(ACCOUNT, "0a1b-code", "src/train.py")


def test_another_accounts_azure_url_is_refused_naming_the_field():
    with pytest.raises(ValidationFailed) as caught:
        datastores.resolve_asset_uri(WS, blob_access.azure_container_url(OTHER, "code") + "/src", "properties.codeUri")
    assert caught.value.target == "properties.codeUri" and OTHER in caught.value.message


@pytest.mark.parametrize("container", ["azureml", "0a1b-code", f"azureml-blobstore-{datastores.workspace_guid(WS.key)}"])
def test_an_account_sas_opens_every_container_of_its_account(container):
    query = _query(blob_access.mint_account(SECRET, ACCOUNT, NOW))
    assert {"ss", "srt"} <= set(query) and "sr" not in query
    blob_access.verify(SECRET, ACCOUNT, container, query, NOW, "r", "some/blob")
    blob_access.verify(SECRET, ACCOUNT, container, query, NOW, "w")


def test_an_account_sas_opens_no_other_account_and_expires():
    query = _query(blob_access.mint_account(SECRET, ACCOUNT, NOW, lifetime=timedelta(hours=1)))
    with pytest.raises(Forbidden):
        blob_access.verify(SECRET, OTHER, "azureml", query, NOW, "r")
    with pytest.raises(Forbidden) as caught:
        blob_access.verify(SECRET, ACCOUNT, "azureml", query, NOW + timedelta(hours=2), "r")
    assert caught.value.target == "se"


def test_a_container_sas_cannot_be_widened_into_an_account_one():
    query = _query(blob_access.mint(SECRET, ACCOUNT, "azureml", NOW))
    widened = {k: v for k, v in query.items() if k != "sr"} | {"ss": "b", "srt": "sco"}
    blob_access.verify(SECRET, ACCOUNT, "azureml", query, NOW, "r")
    for container in ("azureml", "0a1b-code"):
        with pytest.raises(Forbidden):
            blob_access.verify(SECRET, ACCOUNT, container, widened, NOW, "r")
    with pytest.raises(Forbidden):
        blob_access.verify(SECRET, ACCOUNT, "0a1b-code", query, NOW, "r")
