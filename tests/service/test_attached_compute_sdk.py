"""The real SDK attaches a stand-in host (tests/hosts.py) as a VirtualMachineCompute to a live api process: the
host is checked, the compute reads back as attached with its user and port but no secret, a wrong user and a
malformed key are 400s naming their fields and leave nothing, and a detach starts (no controller runs here: the
controller's part is in test_attached_compute.py)."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.hosts import stand_in_hosts
from tests.service.conftest import clean_env

pytestmark = pytest.mark.docker
PROBE = Path(__file__).with_name("attached_probe.py")


def test_sdk_attaches_a_host(live_api, tmp_path):
    bad_key = tmp_path / "bad_key"
    bad_key.write_text("-----BEGIN OPENSSH PRIVATE KEY-----\nnot a key\n-----END OPENSSH PRIVATE KEY-----\n")
    with stand_in_hosts(tmp_path) as lab:
        host = lab.start(1)[0]
        env = {**clean_env(), **live_api.env_vars(), "TMPDIR": str(tmp_path)}
        result = subprocess.run([sys.executable, str(PROBE), host.address, host.username, str(lab.keys.private_file),
                                 str(bad_key)], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=240)
        assert result.returncode == 0, result.stderr[-3000:]
        with host.engine() as engine:
            assert engine.containers.list(all=True) == []  # the checks ran nothing there
    seen = json.loads(result.stdout[result.stdout.rindex('{"attached"'):])
    assert seen["attached"] == "VirtualMachineCompute" and seen["type"] == "virtualmachine"
    assert seen["state"] == "Succeeded" and seen["resource_id"].endswith(f"/virtualMachines/{host.address}")
    assert (seen["user"], seen["port"], seen["password"], seen["key_file"]) == (host.username, 22, None, None)
    assert seen["listed"] == ["box"]
    assert seen["wrong_user"] == {"status": 400, "target": "properties.properties.administratorAccount"}
    assert seen["malformed_key"] == {"status": 400,
                                     "target": "properties.properties.administratorAccount.privateKeyData"}
    assert seen["after_detach"] == "Deleting" and seen["all"] == ["box"]
    assert lab.keys.private_pem.splitlines()[1] not in result.stdout + result.stderr
