"""The Azure CLI for the end-to-end tests: azure-cli from PyPI in a venv of its own (its exact pins clash with the
SDK's), installed once per checkout as tests/e2e/sdk_releases.py installs older SDKs, and a runner that
answers what `-o json` printed."""

import json
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests import venvs

ROOT = Path(__file__).resolve().parents[2]
AZ_VERSION = "2.91.0"  # the newest on PyPI when this was written; its `ml` extension is not on PyPI (README)


def installed() -> Path:
    return venvs.once(ROOT / ".venv-az" / AZ_VERSION, f"azure-cli=={AZ_VERSION}").with_name("az")


@dataclass
class Az:
    executable: Path
    env: dict[str, str]

    def run(self, *args: str) -> subprocess.CompletedProcess:
        return subprocess.run([str(self.executable), *args], env=venvs.caching_bytecode(self.env),
                              capture_output=True, text=True, timeout=300)

    def __call__(self, *args: str) -> Any:
        """What the command printed as JSON; it must succeed."""
        done = self.run(*args, "--output", "json")
        assert done.returncode == 0, f"az {' '.join(args)} exited {done.returncode}:\n{done.stderr[-3000:]}"
        return json.loads(done.stdout) if done.stdout.strip() else None
