"""The storage URLs the api hands out, read back by the real SDK's own parsers (against a live api process, with
only the `amlemu env` variables): a code version downloads with the SDK's code download, a model with
models.download, a data asset with the SDK's artifact download, byte-identical, and nothing leaves the machine.
Job outputs are read back by jobs.download in the end-to-end sweep (they need a controller)."""

import json
import subprocess
import sys
from pathlib import Path

from tests.service.conftest import clean_env

PROBE = Path(__file__).with_name("storage_probe.py")


def test_sdk_reads_back_and_downloads_code_models_and_data(live_api, tmp_path):
    env = {**clean_env(), **live_api.env_vars(), "AMLEMU_HOME": str(live_api.home)}
    result = subprocess.run([sys.executable, str(PROBE), str(tmp_path)], env=env, cwd=tmp_path,
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-4000:]
    seen = json.loads(result.stdout.strip().splitlines()[-1])
    assert seen["source"] and seen["code"] == seen["source"]
    assert seen["model"] == seen["source"] and seen["data"] == seen["source"]
    # Azure's host-style form, the only one the SDK's code download parses; the files come through the
    # workspaceblobstore datastore, on the emulator's storage suffix.
    account = seen["datastore"]["account_name"]
    assert seen["code_path"].startswith(f"https://{account}.blob.core.windows.net/")
    assert seen["code_path"].endswith("/src") and seen["code_created_path"] == seen["code_path"]
    assert seen["datastore"]["endpoint"] == f"localhost:{live_api.port}"
    assert seen["data_path"].startswith("azureml://datastores/workspaceblobstore/paths/")
    assert set(seen["looked_up"]) <= {"localhost", f"{account}.blob.localhost"}, seen["looked_up"]
