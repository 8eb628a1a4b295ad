"""Code uploads and environments through the unmodified azure-ai-ml SDK, as job submission does them."""

import uuid
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from azure.ai.ml.entities import Environment
from azure.ai.ml.entities._assets import Code
from azure.core.exceptions import HttpResponseError, ResourceNotFoundError
from azure.storage.blob import ContainerClient

from emulator.domain.storage import blob_access
from tests.e2e.sdk_releases import NEWEST, run_probe

pytestmark = pytest.mark.e2e


def _files(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def _source_tree(tmp_path: Path) -> Path:
    src = tmp_path / "src"
    (src / "pkg").mkdir(parents=True)
    (src / "main.py").write_text("import sys\nprint('hello', sys.argv)\n")
    (src / "pkg" / "__init__.py").write_bytes(b"")  # empty files upload without an MD5
    (src / "pkg" / "Data.BIN").write_bytes(uuid.uuid4().bytes * 5000)  # unique content: a fresh hash per run
    return src


def _blob_folder(stack, code_uri: str) -> Path:
    # codeUri is Azure's https://<account>.blob.core.windows.net/<container>/<folder name>, which the SDK's code
    # download parses: it names where the files are, and nothing fetches it
    account, container, folder = blob_access.blob_location(code_uri)
    assert urlsplit(code_uri).hostname == f"{account}.blob.core.windows.net" and folder, code_uri
    return Path(stack.home) / "blobs" / account / container / folder


def _blob_count(stack) -> int:
    return sum(1 for p in (Path(stack.home) / "blobs").rglob("*") if p.is_file())


def test_code_upload_lands_byte_identical_and_is_deduplicated(ml_client, stack, tmp_path):
    src = _source_tree(tmp_path)
    code = ml_client._code.create_or_update(Code(path=str(src)))
    assert code.id and "/codes/" in code.id and code.id.endswith("/versions/1")
    folder = _blob_folder(stack, code.path)
    assert _files(folder) == _files(src)

    blobs_before = _blob_count(stack)
    again = ml_client._code.create_or_update(Code(path=str(src)))
    assert again.id == code.id  # found by hash under a fresh random name; nothing uploaded
    assert _blob_count(stack) == blobs_before
    assert ml_client._code.get(code.name, code.version).path == code.path


def test_a_sas_from_another_upload_is_refused(ml_client, stack, tmp_path):
    code = ml_client._code.create_or_update(Code(path=str(_source_tree(tmp_path))))
    account, container, _ = blob_access.blob_location(code.path)
    container_url = f"{stack.url}/blob/{account}/{container}"
    response = ml_client._code._service_client.code_versions.create_or_get_start_pending_upload(
        resource_group_name=stack.resource_group, workspace_name=stack.workspace, name="probe", version="1",
        body={"pendingUploadType": "TemporaryBlobReference"})
    other_sas = urlsplit(response.blob_reference_for_consumption.credential.sas_uri).query
    with pytest.raises(HttpResponseError) as refused:
        list(ContainerClient.from_container_url(f"{container_url}?{other_sas}").list_blobs())
    assert refused.value.status_code == 403
    assert refused.value.error_code == "AuthenticationFailed"


def test_azure_storage_blob_client_round_trip_with_blocks(ml_client, stack):
    response = ml_client._code._service_client.code_versions.create_or_get_start_pending_upload(
        resource_group_name=stack.resource_group, workspace_name=stack.workspace, name="blocks", version="1",
        body={"pendingUploadType": "TemporaryBlobReference"})
    client = ContainerClient.from_container_url(response.blob_reference_for_consumption.credential.sas_uri,
                                                max_single_put_size=1024, max_block_size=512)
    data = bytes(range(256)) * 10
    client.upload_blob("dir/big.bin", data, validate_content=True)
    client.get_blob_client("dir/big.bin").set_blob_metadata({"upload_status": "completed"})
    assert client.download_blob("dir/big.bin").readall() == data
    assert client.get_blob_client("dir/big.bin").get_blob_properties().metadata == {"upload_status": "completed"}
    assert [b.name for b in client.list_blobs(name_starts_with="dir/")] == ["dir/big.bin"]
    assert [b.name for b in client.walk_blobs()] == ["dir/"]
    assert not client.get_blob_client("dir/missing").exists()
    with pytest.raises(ResourceNotFoundError):
        client.download_blob("dir/missing").readall()


def test_environment_create_get_list_latest(ml_client):
    name = f"e2e-env-{uuid.uuid4().hex[:6]}"
    first = ml_client.environments.create_or_update(Environment(name=name, version="1", image="python:3.11-slim"))
    assert (first.name, first.version, first.image) == (name, "1", "python:3.11-slim")
    second = ml_client.environments.create_or_update(Environment(name=name, version="2", image="python:3.12-slim",
                                                                 description="newer"))
    assert ml_client.environments.get(name, version="1").image == "python:3.11-slim"
    assert ml_client.environments.get(name, label="latest").version == second.version == "2"
    assert sorted(e.version for e in ml_client.environments.list(name=name)) == ["1", "2"]
    assert name in {e.name for e in ml_client.environments.list()}
    with pytest.raises(ResourceNotFoundError):
        ml_client.environments.get(name, version="9")


def test_environment_without_version_auto_increments(ml_client):
    name = f"e2e-auto-{uuid.uuid4().hex[:6]}"
    first = ml_client.environments.create_or_update(Environment(name=name, image="python:3.11-slim"))
    again = ml_client.environments.create_or_update(Environment(name=name, image="python:3.11-slim"))
    newer = ml_client.environments.create_or_update(Environment(name=name, image="python:3.12-slim"))
    assert (first.version, again.version, newer.version) == ("1", "1", "2")


def test_anonymous_environment_as_job_submission_sends_it(ml_client):
    env = ml_client.environments.create_or_update(Environment(image="python:3.11-slim"))
    assert env.name == "CliV2AnonymousEnvironment" and env.version
    assert ml_client.environments.get(env.name, env.version).image == "python:3.11-slim"


def test_malformed_environment_is_a_clear_400(rest, workspace_path):
    response = rest.put(f"{workspace_path}/environments/broken/versions/1",
                        params={"api-version": "2023-04-01-preview"},
                        json={"properties": {"image": "NOT A VALID IMAGE"}})
    assert response.status_code == 400, response.text
    assert response.json()["error"]["target"] == "properties.image"


@pytest.mark.parametrize("release", NEWEST)
def test_asset_flow_on_each_sdk_release(stack, tmp_path, release):
    src = _source_tree(tmp_path)
    name = "e2e-env-v" + release.replace(".", "")
    seen, _ = run_probe(release, Path(__file__).with_name("asset_probe.py"), src, name)
    first, second, code_uri = seen["code"]
    assert first == second and first.endswith("/versions/1")
    assert _files(_blob_folder(stack, code_uri)) == _files(src)
    assert seen["latest"] == "python:3.12-slim"
    assert seen["anonymous"] == ["CliV2AnonymousEnvironment", "python:3.11-slim"]
