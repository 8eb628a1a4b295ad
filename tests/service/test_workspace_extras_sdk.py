"""The real SDK's workspace extras against a live api process (HTTPS, no controller, no MLflow server): the
managed network reads back Disabled by default and as written at create and update (a bad one refused, nothing
changed), keys and their resync answer Azure's shapes, and the diagnosis reports the emulator's own checks, which
here find the controller and the tracking server missing."""

import json
import subprocess
import sys
from pathlib import Path

from tests.service.conftest import clean_env

PROBE = Path(__file__).with_name("workspace_probe.py")


def test_sdk_workspace_extras(live_api, tmp_path):
    env = {**clean_env(), **live_api.env_vars(), "AMLEMU_HOME": str(live_api.home)}
    result = subprocess.run([sys.executable, str(PROBE)], env=env, cwd=tmp_path, capture_output=True, text=True,
                            timeout=300)
    assert result.returncode == 0, result.stderr[-4000:]
    said = [line for line in result.stdout.splitlines() if "{" in line]  # the SDK's pollers print dots too
    seen = json.loads(said[-1][said[-1].index("{"):])
    assert seen["default"] == ["Disabled", [], {"status": "Inactive", "sparkReady": False}]
    assert ["amlemu", "Disabled"] in seen["listed"]
    assert seen["created"][:2] == ["AllowOnlyApprovedOutbound", [["pypi", "FQDN", "UserDefined", "Inactive"],
                                                                 ["storage", "ServiceTag", "UserDefined", "Inactive"]]]
    assert seen["updated"][:2] == ["AllowInternetOutbound", [["keys", "ServiceTag", "UserDefined", "Inactive"]]]
    assert seen["bad_update"] == "properties.managedNetwork.outboundRules.x.type"
    assert seen["after_bad_update"] == seen["updated"]
    assert seen["keys"] == [seen["storage_account"], None]  # SAS only: no account key to give
    assert seen["resync"] is None
    assert seen["diagnosis"] == {
        "storage_account_results": [["StorageAccountWritable", "Information"]],
        "key_vault_results": [["TokenKeyPresent", "Information"], ["CertificateAuthorityPresent", "Information"]],
        "other_results": [["ControllerNotReconciling", "Warning"], ["TrackingServerUnreachable", "Warning"]]}
