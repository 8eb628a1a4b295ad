"""The real SDK registers command components in a live api process (HTTPS, no Docker) with only the `amlemu env`
variables: YAML as Microsoft's docs write it, CommandComponent and command(), anonymous ones, explicit and next
versions, get, list, archive and restore; in a registry of the user's own too; refusals name the field."""

import json
import subprocess
import sys
from pathlib import Path

from tests.service.conftest import clean_env

PROBE = Path(__file__).with_name("component_probe.py")


def test_sdk_registers_reads_and_archives_components(live_api, tmp_path):
    env = {**clean_env(), **live_api.env_vars()}
    result = subprocess.run([sys.executable, str(PROBE), str(tmp_path)], env=env, cwd=tmp_path, capture_output=True,
                            text=True, timeout=240)
    assert result.returncode == 0, result.stderr[-3000:]
    seen = json.loads(result.stdout[result.stdout.rindex('{"workspace"'):])  # after the upload's progress bars
    ws = seen["workspace"]
    version, inputs, has_code = ws["first"]
    assert version == "1" and has_code
    assert inputs["max_epocs"] == {"type": "integer", "min": 0, "max": 100}
    assert inputs["learning_rate"] == {"type": "number", "default": 0.01}
    assert inputs["learning_rate_schedule"] == {"type": "string", "default": "time-based", "enum": ["step", "time-based"]}
    assert inputs["early_stop"] == {"type": "boolean", "optional": True}
    assert ws["second"] == "2" and ws["built"] == ["3", 2, "PyTorchDistribution", True]
    assert ws["plain"] == "CliV2AnonymousEnvironment"
    assert "/components/azureml_anonymous/versions/" in ws["anonymous"]
    assert ws["latest"] == ws["label"] == "2" and ws["by_version"] == [None, "second"]
    assert ws["listed"] == ["hello_cmp", "my_train", "plain_cmp"]  # not the anonymous one
    assert ws["versions"] == ["2", "1"] and ws["after_archive"] == ["1", ["1"]]
    assert ws["archived_whole"] == ["hello_cmp", "my_train"]
    assert "Target: properties.componentSpec.command" in ws["typo"] and "${{inputs.epochs}}" in ws["typo"]
    assert "Conflict" in ws["changed"] and "properties.componentSpec.command" in ws["changed"]
    assert "properties.componentSpec.environment" in ws["missing_env"] and "sklearn-9.9" in ws["missing_env"]
    assert "ResourceNotFound" in ws["unknown"]
    reg = seen["registry"]
    assert reg["id"] == "azureml://registries/probe-comp-reg/components/my_train/versions/1" and reg["code"]
    assert (reg["latest"], reg["listed"], reg["versions"]) == ("1", ["my_train"], ["1"])
    assert "AuthorizationFailed" in reg["builtin"] and "read-only" in reg["builtin"]
