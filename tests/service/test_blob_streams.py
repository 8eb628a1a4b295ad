"""Large blobs stream through a live api process in bounded memory, as azure-storage-blob moves them: Put Blob,
Put Block and Put Block List up, Get Blob whole and by ranges down. The api's peak RSS (VmHWM) must grow far
less than the blob's size, and the bytes must come back as they went. BLOB_STREAM_TEST_MIB=2048 measures with
2 GiB blobs (the figure in the commit that made bodies stream)."""

import hashlib
import os
from pathlib import Path

import httpx
import pytest
from azure.storage.blob import ContainerClient

from tests.service.conftest import LiveApi
from tests.service.test_api import WS_PATH

SIZE = int(os.environ.get("BLOB_STREAM_TEST_MIB", "128")) << 20
MiB = 1 << 20


def peak_rss(pid: int) -> int:
    """The process's peak resident set so far, in bytes (VmHWM)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    raise AssertionError(f"no VmHWM for process {pid}")


def write_blob_file(path: Path, size: int) -> str:
    """A file of `size` incompressible bytes, written a MiB at a time; returns its SHA-256."""
    digest = hashlib.sha256()
    with path.open("wb") as out:
        for _ in range(size // MiB):
            chunk = os.urandom(MiB)
            digest.update(chunk)
            out.write(chunk)
    return digest.hexdigest()


def container_sas_uri(stack) -> str:
    with stack.client() as arm:
        response = arm.post(f"{WS_PATH}/codes/big/versions/1/startPendingUpload",
                            json={"pendingUploadType": "TemporaryBlobReference"})
    assert response.status_code == 200, response.text
    return response.json()["blobReferenceForConsumption"]["credential"]["sasUri"]


def connect(stack, sas_uri: str, **config) -> ContainerClient:
    # validate_content makes the SDK send a single Put Blob as one write, which the connection timeout bounds
    # whole (urllib3 applies the read timeout only once the body is sent): room for a 2 GiB one.
    return ContainerClient.from_container_url(sas_uri, connection_verify=str(stack.ca_file), connection_timeout=600,
                                              read_timeout=600, **config)


@pytest.fixture
def sas_uri(live_api_process: LiveApi) -> str:
    uri = container_sas_uri(live_api_process.stack)
    with connect(live_api_process.stack, uri) as client:  # the first requests' imports and buffers
        client.upload_blob("warm-up", b"x" * MiB)
        client.download_blob("warm-up").readall()
    return uri


def sha256_of_download(container: ContainerClient, name: str) -> str:
    digest = hashlib.sha256()
    for chunk in container.download_blob(name, max_concurrency=2).chunks():  # ranged Get Blob requests
        digest.update(chunk)
    return digest.hexdigest()


def sha256_of_whole_get(container: ContainerClient, name: str, ca_file: Path) -> str:
    digest = hashlib.sha256()
    with httpx.stream("GET", container.get_blob_client(name).url, verify=str(ca_file), timeout=60) as response:
        assert response.status_code == 200
        assert int(response.headers["Content-Length"]) == SIZE
        for chunk in response.iter_bytes():
            digest.update(chunk)
    return digest.hexdigest()


def test_large_blobs_stream_in_and_out_in_bounded_memory(live_api_process, sas_uri, tmp_path):
    stack = live_api_process.stack
    source = tmp_path / "big.bin"
    expected = write_blob_file(source, SIZE)
    before = peak_rss(live_api_process.pid)
    with connect(stack, sas_uri, max_single_put_size=2 * SIZE) as single, source.open("rb") as data:
        single.upload_blob("single/big.bin", data, validate_content=True)  # one Put Blob, Content-MD5 checked
    with connect(stack, sas_uri, max_single_put_size=4 * MiB, max_block_size=4 * MiB) as container, \
            source.open("rb") as data:  # Put Block in 4 MiB blocks, two at a time, then Put Block List
        container.upload_blob("blocks/big.bin", data, max_concurrency=2)
        for name in ("single/big.bin", "blocks/big.bin"):
            assert sha256_of_download(container, name) == expected, name
            assert sha256_of_whole_get(container, name, stack.ca_file) == expected, name
    growth = peak_rss(live_api_process.pid) - before
    print(f"api peak RSS {peak_rss(live_api_process.pid) / MiB:.0f} MiB, grew {growth / MiB:.1f} MiB "
          f"moving two {SIZE // MiB} MiB blobs")
    assert growth < SIZE // 4, f"the api's peak RSS grew {growth / MiB:.0f} MiB for a {SIZE // MiB} MiB blob"
    assert not list((stack.home / "blobs.tmp").glob("*.*")), "a staging file was left behind"
