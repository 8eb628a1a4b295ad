"""The Azure CLI for the end-to-end tests: azure-cli from PyPI in a venv of its own (its exact pins clash with the
SDK's), installed once per checkout as tests/e2e/sdk_releases.py installs older SDKs, and a runner that
answers what `-o json` printed."""

import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.e2e.sdk_releases import caching_bytecode

ROOT = Path(__file__).resolve().parents[2]
AZ_VERSION = "2.91.0"  # the newest on PyPI when this was written; its `ml` extension is not on PyPI (README)


def installed() -> Path:
    venv = ROOT / ".venv-az" / AZ_VERSION
    if not (venv / ".installed").exists():
        subprocess.run([sys.executable, "-m", "venv", "--clear", str(venv)], check=True)
        done = subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q",
                               "--no-compile", f"azure-cli=={AZ_VERSION}"], capture_output=True, text=True,
                              timeout=1800)
        assert done.returncode == 0, f"azure-cli {AZ_VERSION} did not install from PyPI:\n{done.stderr[-3000:]}"
        (venv / ".installed").touch()
    return venv / "bin" / "az"


@dataclass
class Az:
    executable: Path
    env: dict[str, str]

    def run(self, *args: str) -> subprocess.CompletedProcess:
        return subprocess.run([str(self.executable), *args], env=caching_bytecode(self.env), capture_output=True,
                              text=True, timeout=300)

    def __call__(self, *args: str) -> Any:
        """What the command printed as JSON; it must succeed."""
        done = self.run(*args, "--output", "json")
        assert done.returncode == 0, f"az {' '.join(args)} exited {done.returncode}:\n{done.stderr[-3000:]}"
        return json.loads(done.stdout) if done.stdout.strip() else None
