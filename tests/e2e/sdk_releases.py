"""The azure-ai-ml releases the end-to-end suite drives, each in a venv of its own under .venv-sdk/ (the suite's own
pin runs in the suite's interpreter), the newest release on the package index, and running a probe under one."""

import json
import os
import re
import subprocess
import sys
from functools import cache
from importlib.metadata import version
from pathlib import Path

from emulator.cli.stack import python_path
from tests import venvs
from tests.e2e.sdk_calls import FAILED

ROOT = Path(__file__).resolve().parents[2]
OWN = version("azure-ai-ml")  # pyproject.toml's pin
# The newest release and the two minors before it (the flows of test_models_sdk, test_assets_sdk and
# test_online_endpoints_sdk run on these), then older ones users still pin (test_sdk_versions runs all), each with
# what its users must pin beside it. Each venv also gets six: all these but 1.35 and 1.27 import it without declaring it.
NEWEST = [OWN, "1.34.1", "1.33.0"]
RELEASES = {**{release: [] for release in NEWEST}, "1.32.0": [], "1.30.0": [], "1.27.1": [], "1.26.5": [],
            # it asks for any marshmallow >= 3.5, and imports fields._T, which 3.24 dropped
            "1.22.4": ["marshmallow<3.24"]}


def python_for(release: str) -> str:
    if release == OWN:
        return sys.executable
    return str(venvs.once(ROOT / ".venv-sdk" / release, f"azure-ai-ml=={release}", "azure-identity", "six",
                          *RELEASES.get(release, [])))


@cache
def newest_release() -> str:
    """The newest azure-ai-ml on the package index, as pip sees it (pre-releases left out)."""
    said = subprocess.run([sys.executable, "-m", "pip", "index", "versions", "azure-ai-ml"], capture_output=True,
                          text=True, timeout=120)
    newest = newest_in(said.stdout)
    assert newest, f"`pip index versions azure-ai-ml` named no release: {said.stdout}{said.stderr}"
    return newest


def newest_in(pip_said: str) -> str | None:
    """`azure-ai-ml (1.35.2)`, the first line of `pip index versions`, names the newest release."""
    found = re.search(r"^azure-ai-ml \(([^)\s]+)\)", pip_said, re.MULTILINE)
    return found.group(1) if found else None


def run_probe(release: str, probe: Path, *args, timeout: float = 600) -> tuple[dict, str]:
    """What the probe printed last as JSON, and all it printed; a failure names the release and the failing call."""
    result = subprocess.run([python_for(release), str(probe), *map(str, args)], capture_output=True, text=True,
                            env=venvs.caching_bytecode({**os.environ, "PYTHONPATH": python_path(str(ROOT))}),
                            timeout=timeout)
    assert result.returncode == 0, f"azure-ai-ml {release}, {probe.name}: {failed_call(result.stderr)}"
    return json.loads(result.stdout.strip().splitlines()[-1]), result.stdout


def failed_call(stderr: str) -> str:
    """The probe's FAILED line, or else the last line of what it printed (an import the release lacks)."""
    lines = [line for line in stderr.splitlines() if line.strip()]
    named = [line for line in lines if line.startswith(FAILED)]
    return named[-1] if named else (lines[-1] if lines else "(it printed nothing on stderr)")
