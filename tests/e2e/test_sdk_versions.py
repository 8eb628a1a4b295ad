"""The latest azure-ai-ml and the two minor releases before it drive the same cluster flow."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from emulator.cli.stack import python_path

pytestmark = pytest.mark.e2e
ROOT = Path(__file__).resolve().parents[2]
PROBE = Path(__file__).with_name("sdk_probe.py")
# 1.33 and 1.34 import six without declaring it.
RELEASES = {"1.35.2": None, "1.34.1": ["azure-ai-ml==1.34.1", "azure-identity", "six"],
            "1.33.0": ["azure-ai-ml==1.33.0", "azure-identity", "six"]}


def _python(release: str) -> str:
    packages = RELEASES[release]
    if packages is None:
        return sys.executable
    venv = ROOT / ".venv-sdk" / release
    python = venv / "bin" / "python"
    if not (venv / ".installed").exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        subprocess.run([str(python), "-m", "pip", "install", "-q", *packages], check=True)
        (venv / ".installed").touch()
    return str(python)


@pytest.mark.parametrize("release", list(RELEASES))
def test_cluster_flow_on_each_sdk_release(stack, release):
    name = "e2e-v" + release.replace(".", "")
    result = subprocess.run([_python(release), str(PROBE), name], capture_output=True, text=True,
                            env={**os.environ, "PYTHONPATH": python_path(str(ROOT))}, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    seen = json.loads(result.stdout.strip().splitlines()[-1])
    assert seen["workspace"] == os.environ["AMLEMU_WORKSPACE"]
    assert seen["created"] == ["AmlCompute", "Succeeded", "Standard_DS2_v2", "low_priority", 1, 2, 60]
    assert seen["listed"] and seen["deleted"]
    assert seen["nodes"] == ["idle"]
    assert seen["ds2"] == [2, 0]
    assert seen["usages"] > 0
    assert seen["updated_max"] == 3
