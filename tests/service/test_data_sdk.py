"""The real SDK's data assets against a live api process (HTTPS, no Docker), with only the `amlemu env`
variables: created from local paths (uploaded) and a datastore URI, versions, labels, archive, download, and
a job's inputs naming them."""

import json
import subprocess
import sys
from pathlib import Path

from tests.service.conftest import clean_env

PROBE = Path(__file__).with_name("data_probe.py")
UPLOADED = "azureml://datastores/workspaceblobstore/paths/LocalUpload/"


def test_sdk_data_assets_round_trip_and_name_job_inputs(live_api, tmp_path):
    env = {**clean_env(), **live_api.env_vars(), "AMLEMU_HOME": str(live_api.home)}
    result = subprocess.run([sys.executable, str(PROBE), str(tmp_path)], env=env, cwd=tmp_path,
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-4000:]
    seen = json.loads(result.stdout.strip().splitlines()[-1])
    assert seen["file"]["version"] == "7" and seen["file"]["type"] == "uri_file"
    assert seen["file"]["path"].startswith(UPLOADED) and seen["file"]["path"].endswith("/one.csv")
    assert seen["auto_versions"] == ["1", "2"]
    assert seen["mltable"].startswith(UPLOADED) and seen["mltable"].endswith("/table")
    assert seen["remote"]["path"] == seen["remote"]["given"]
    assert seen["containers"] == [["folder", "2"], ["onefile", "7"], ["remote", "1"], ["table", "1"]]
    assert seen["folder_versions"] == ["1", "2"] and seen["latest"] == "2"
    assert seen["after_archive"] == ["1"] and seen["after_restore"] == ["1", "2"]
    assert seen["archived_containers"] == ["folder", "onefile", "table"]
    assert seen["downloaded"] == ["a.csv", "sub/b.txt"]
    assert "properties.dataUri" in seen["ghost"] and "no folder" in seen["ghost"]
    # The SDK sends an ARM id for either form and reads it back as an azureml id; `@latest` keeps the
    # prefix on the name it resolved (data/azureml:folder/versions/2).
    assert seen["latest_input"] == {"data": "azureml:folder:2"}
    assert seen["versioned_input"] == {"data": "onefile:7"}
    assert "properties.inputs.data.uri" in seen["unknown_version"] and "'99'" in seen["unknown_version"]
