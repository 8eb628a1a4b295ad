"""The embedded blob store (path-style Blob REST API under /blob), driven in-process through TestClient."""

import base64
import hashlib
from urllib.parse import urlsplit
from xml.etree import ElementTree as ET

import pytest

from tests.service.test_api import ACCOUNT, API, WS_PATH

CODES = f"{WS_PATH}/codes"


def md5(data: bytes) -> str:
    return base64.b64encode(hashlib.md5(data).digest()).decode()


def start_upload(client, auth, name: str = "c0de") -> dict:
    response = client.post(f"{CODES}/{name}/versions/1/startPendingUpload", params=API, headers=auth,
                           json={"pendingUploadType": "TemporaryBlobReference"})
    assert response.status_code == 200, response.text
    return response.json()


class Container:
    """A container URL and its SAS, as startPendingUpload hands them out."""

    def __init__(self, client, auth):
        self.client = client
        ref = start_upload(client, auth)["blobReferenceForConsumption"]
        parts = urlsplit(ref["credential"]["sasUri"])
        self.path, self.sas = parts.path, parts.query
        self.blob_uri = ref["blobUri"]

    def url(self, blob: str = "", query: str = "") -> str:
        suffix = f"/{blob}" if blob else ""
        return f"{self.path}{suffix}?{self.sas}" + (f"&{query}" if query else "")

    def put(self, blob: str, data: bytes, **headers):
        return self.client.put(self.url(blob), content=data,
                               headers={"x-ms-blob-type": "BlockBlob", "Content-MD5": md5(data), **headers})


@pytest.fixture
def container(client, auth) -> Container:
    return Container(client, auth)


def storage_error(response, status: int, code: str) -> None:
    assert response.status_code == status, response.text
    assert response.headers["x-ms-error-code"] == code
    if response.request.method != "HEAD":
        assert ET.fromstring(response.content).find("Code").text == code


def blob_file(settings, container: Container, blob: str):
    _, _, account, name = container.path.split("/")
    return settings.data_dir / "blobs" / account / name / blob


# blob store
def test_start_pending_upload_hands_out_a_container_sas(client, auth):
    body = start_upload(client, auth)
    ref = body["blobReferenceForConsumption"]
    assert body["pendingUploadType"] == "TemporaryBlobReference" and body["pendingUploadId"]
    assert ref["credential"]["credentialType"] == "SAS"
    # Uploads go to the path-style sasUri; the version is named after blobUri, in the form the SDK's code
    # download parses. Both name the same container of the workspace's account.
    container = ref["blobUri"].rsplit("/", 1)[-1]
    assert ref["credential"]["sasUri"].startswith(f"https://localhost:8443/blob/{ACCOUNT}/{container}?")
    assert ref["blobUri"] == f"https://{ACCOUNT}.blob.core.windows.net/{container}"
    assert ref["storageAccountArmId"].endswith(f"/providers/Microsoft.Storage/storageAccounts/{ACCOUNT}")
    query = dict(p.split("=", 1) for p in urlsplit(ref["credential"]["sasUri"]).query.split("&"))
    assert {"sv", "sr", "sp", "se", "sig"} <= set(query)


def test_put_head_get_blob_round_trip_with_md5(client, container, settings):
    data = b"print('hello')\n"
    put = container.put("src/main.py", data, **{"x-ms-blob-content-type": "text/x-python"})
    assert put.status_code == 201, put.text
    assert put.headers["Content-MD5"] == md5(data)
    assert blob_file(settings, container, "src/main.py").read_bytes() == data
    head = client.head(container.url("src/main.py"))
    assert head.status_code == 200
    assert head.headers["Content-Length"] == str(len(data)) and head.headers["Content-MD5"] == md5(data)
    assert head.headers["x-ms-blob-type"] == "BlockBlob" and head.headers["Content-Type"] == "text/x-python"
    get = client.get(container.url("src/main.py"))
    assert get.status_code == 200 and get.content == data
    ranged = client.get(container.url("src/main.py"), headers={"x-ms-range": "bytes=0-4",
                                                                "x-ms-range-get-content-md5": "true"})
    assert ranged.status_code == 206 and ranged.content == data[:5]
    assert ranged.headers["Content-Range"] == f"bytes 0-4/{len(data)}" and ranged.headers["Content-MD5"] == md5(data[:5])


def test_missing_blob_is_blob_not_found(client, container):
    storage_error(client.head(container.url("nope.txt")), 404, "BlobNotFound")
    storage_error(client.get(container.url("nope.txt")), 404, "BlobNotFound")


def staged_files(settings) -> list:
    return [p for p in (settings.data_dir / "blobs.tmp").rglob("*") if p.is_file()]


def test_md5_mismatch_is_refused_and_nothing_written(client, container, settings):
    response = container.put("a.txt", b"abc", **{"Content-MD5": md5(b"xyz")})
    storage_error(response, 400, "Md5Mismatch")
    assert not blob_file(settings, container, "a.txt").exists()
    block = client.put(container.url("a.txt", "comp=block&blockid=YmxvY2s="), content=b"abc",
                       headers={"Content-MD5": md5(b"xyz")})
    storage_error(block, 400, "Md5Mismatch")
    assert staged_files(settings) == []  # the received bodies went nowhere a reader or a later commit looks


def test_a_failed_overwrite_keeps_the_old_blob_whole(client, container, settings):
    assert container.put("a.txt", b"one").status_code == 201
    storage_error(container.put("a.txt", b"two" * 1000, **{"Content-MD5": md5(b"other")}), 400, "Md5Mismatch")
    assert client.get(container.url("a.txt")).content == b"one"
    assert staged_files(settings) == []


def test_bodies_past_azures_limits_are_refused_with_413(client, container, settings, monkeypatch):
    from emulator.api.routes import blobs as routes
    monkeypatch.setattr(routes, "MAX_PUT_BLOB", 10)
    monkeypatch.setattr(routes, "MAX_BLOCK", 10)
    monkeypatch.setattr(routes, "MAX_BLOCK_LIST", 10)
    storage_error(container.put("a.txt", b"x" * 11), 413, "RequestBodyTooLarge")
    assert container.put("a.txt", b"x" * 10).status_code == 201
    storage_error(client.put(container.url("b.bin", "comp=block&blockid=YmxvY2s="), content=b"y" * 11), 413,
                  "RequestBodyTooLarge")
    storage_error(client.put(container.url("b.bin", "comp=blocklist"), content=b"<BlockList/>" * 2), 413,
                  "RequestBodyTooLarge")
    assert not blob_file(settings, container, "b.bin").exists() and staged_files(settings) == []


def test_a_range_md5_is_only_for_ranges_of_at_most_4_mib(client, container):
    container.put("big.bin", b"z" * ((4 << 20) + 1))
    for end, status in (((4 << 20) - 1, 206), (4 << 20, 400)):
        response = client.get(container.url("big.bin"), headers={"x-ms-range": f"bytes=0-{end}",
                                                                 "x-ms-range-get-content-md5": "true"})
        assert response.status_code == status, response.text
    plain = client.get(container.url("big.bin"), headers={"x-ms-range": "bytes=1-"})
    assert plain.status_code == 206 and plain.content == b"z" * (4 << 20)


def test_if_none_match_star_refuses_overwrite(client, container, settings):
    assert container.put("a.txt", b"one").status_code == 201
    storage_error(container.put("a.txt", b"two", **{"If-None-Match": "*"}), 409, "BlobAlreadyExists")
    assert blob_file(settings, container, "a.txt").read_bytes() == b"one"


def test_metadata_is_set_and_read_back(client, container):
    container.put("a.txt", b"one")
    response = client.put(container.url("a.txt", "comp=metadata"),
                          headers={"x-ms-meta-name": "c0de", "x-ms-meta-upload_status": "completed"})
    assert response.status_code == 200, response.text
    head = client.head(container.url("a.txt"))
    assert head.headers["x-ms-meta-name"] == "c0de" and head.headers["x-ms-meta-upload_status"] == "completed"


def test_list_blobs_with_prefix_delimiter_and_metadata(client, container):
    for name in ("src/a.py", "src/pkg/b.py", "other.txt"):
        container.put(name, name.encode(), **{"x-ms-meta-kind": "file"})
    response = client.get(container.url(query="restype=container&comp=list&prefix=src/&include=metadata"))
    assert response.status_code == 200, response.text
    root = ET.fromstring(response.content)
    assert [b.find("Name").text for b in root.iter("Blob")] == ["src/a.py", "src/pkg/b.py"]
    assert root.find("Blobs/Blob/Properties/Content-Length").text == "8"
    assert root.find("Blobs/Blob/Metadata/kind").text == "file"
    walked = ET.fromstring(client.get(container.url(query="restype=container&comp=list&prefix=src/&delimiter=/"))
                           .content)
    assert [b.find("Name").text for b in walked.iter("Blob")] == ["src/a.py"]
    assert [p.find("Name").text for p in walked.iter("BlobPrefix")] == ["src/pkg/"]
    paged = ET.fromstring(client.get(container.url(query="restype=container&comp=list&maxresults=2")).content)
    assert len(list(paged.iter("Blob"))) == 2 and paged.find("NextMarker").text == "src/a.py"


def test_block_upload_and_commit(client, container, settings):
    parts = [b"x" * 10, b"y" * 5]
    ids = [base64.b64encode(f"block-{i:04d}".encode()).decode() for i in range(2)]
    for block_id, part in zip(ids, parts, strict=True):
        response = client.put(container.url("big.bin", f"comp=block&blockid={block_id}"), content=part,
                              headers={"Content-MD5": md5(part)})
        assert response.status_code == 201, response.text
    body = "<?xml version='1.0' encoding='utf-8'?><BlockList>" + "".join(f"<Latest>{i}</Latest>" for i in ids) \
        + "</BlockList>"
    response = client.put(container.url("big.bin", "comp=blocklist"), content=body.encode())
    assert response.status_code == 201, response.text
    assert response.headers["Content-MD5"] == md5(body.encode())
    assert blob_file(settings, container, "big.bin").read_bytes() == b"".join(parts)


@pytest.mark.parametrize("mutate", [
    lambda url: url.split("?")[0],  # no SAS at all
    lambda url: url.replace("sig=", "sig=AAAA"),  # forged signature
    lambda url: url.replace("se=", "se=2000"),  # tampered expiry
])
def test_requests_without_a_valid_sas_are_refused(client, container, settings, mutate):
    url = container.url("a.txt")
    response = client.put(mutate(url), content=b"abc", headers={"x-ms-blob-type": "BlockBlob"})
    storage_error(response, 403, "AuthenticationFailed")
    storage_error(client.get(mutate(container.url(query="restype=container&comp=list"))), 403,
                  "AuthenticationFailed")
    assert not blob_file(settings, container, "a.txt").exists()


def test_a_sas_is_bound_to_its_container(client, auth, container, settings):
    other = Container(client, auth)
    forged = f"{other.path}/a.txt?{container.sas}"
    storage_error(client.put(forged, content=b"x", headers={"x-ms-blob-type": "BlockBlob"}), 403,
                  "AuthenticationFailed")
    assert not blob_file(settings, other, "a.txt").exists()


@pytest.mark.parametrize("blob", ["../escape.txt", "a/../../escape.txt", "%2E%2E/escape.txt", "a/%2E%2E/%2E%2E/x",
                                  "a/%2E/b", "a//b", "a%5Cb", "a%00b", "%2E%2E%2F%2E%2E%2Fescape.txt"])
def test_path_traversal_is_refused(client, container, settings, blob):
    # httpx folds literal '.' and '..' segments itself; the percent-encoded ones reach the server as sent.
    response = client.put(f"{container.path}/{blob}?{container.sas}", content=b"x",
                          headers={"x-ms-blob-type": "BlockBlob"})
    assert response.status_code in (400, 403, 404), response.text
    assert "x-ms-error-code" in response.headers
    assert [p for p in (settings.data_dir / "blobs").rglob("*") if p.is_file()] == []


def test_blob_names_keep_their_case(client, container, settings):
    assert container.put("Src/METADATA/Token.py", b"x").status_code == 201
    assert blob_file(settings, container, "Src/METADATA/Token.py").read_bytes() == b"x"


def test_only_block_blobs(client, container):
    response = container.put("a.txt", b"x", **{"x-ms-blob-type": "PageBlob"})
    storage_error(response, 400, "InvalidHeaderValue")


def test_a_folder_like_name_is_simply_not_found(client, container):
    # models.download asks for "<path>/" to tell a folder model from a file one: Azure answers 404.
    assert container.put("dir/model.pkl", b"x").status_code == 201
    storage_error(client.head(container.url("dir/model.pkl/")), 404, "BlobNotFound")
    storage_error(client.head(container.url("dir/")), 404, "BlobNotFound")
    storage_error(client.get(container.url("dir/")), 404, "BlobNotFound")
