"""The real SDK uploads to and downloads from a datastore of a live api process (HTTPS, no Docker), reaching
https://<account>.blob.localhost:<port> through the client shim, with only the `amlemu env` variables."""

import json
import subprocess
import sys
from pathlib import Path

from emulator.domain.ids import WorkspaceRef
from emulator.domain.storage import blob_access, datastores
from tests.service.conftest import clean_env

PROBE = Path(__file__).with_name("datastore_probe.py")


def test_sdk_uploads_and_downloads_through_the_default_datastore(live_api, tmp_path):
    source, destination = tmp_path / "local", tmp_path / "downloaded"
    (source / "sub").mkdir(parents=True)
    (source / "train.csv").write_text("a,b\n1,2\n")
    (source / "sub" / "notes.txt").write_text("hello")
    env = {**clean_env(), **live_api.env_vars(), "AMLEMU_HOME": str(live_api.home)}
    result = subprocess.run([sys.executable, str(PROBE), str(source), str(destination)], env=env, cwd=tmp_path,
                            capture_output=True, text=True, timeout=180)
    assert result.returncode == 0, result.stderr[-3000:]
    seen = json.loads(result.stdout.strip().splitlines()[-1])
    assert seen["default"] == "workspaceblobstore"
    assert seen["listed"] == ["workspaceartifactstore", "workspaceblobstore"]
    ref = WorkspaceRef(live_api.subscription, live_api.resource_group, live_api.workspace)
    assert seen["account_url"] == f"https://{blob_access.workspace_account(ref)}.blob.localhost:{live_api.port}"
    assert seen["credential_is_sas"] and seen["container"].startswith("azureml-blobstore-")
    # The URI a job would carry for this input, resolved as the emulator will resolve it to mount it.
    account, container, blob = datastores.resolve_uri(ref, seen["uri"], "inputs.data.path")
    assert (account, container) == (blob_access.workspace_account(ref), seen["container"]) and blob.startswith("LocalUpload/")
    stored = live_api.home / "blobs" / account / container / blob
    assert (stored / "train.csv").read_text() == "a,b\n1,2\n"
    assert (stored / "sub" / "notes.txt").read_text() == "hello"
    downloaded = {p.relative_to(destination).as_posix(): p.read_text() for p in destination.rglob("*")
                  if p.is_file()}
    assert sorted(downloaded.values()) == ["a,b\n1,2\n", "hello"], downloaded
