"""The tests' own venvs (older SDK releases, azure-cli, a user's project), made by uv: a well-kept installer that
resolves and links in seconds what pip takes tens of seconds of CPU to install, the CPU a loaded run lacks (azure-ai-ml
1.32.0 and its dependencies: 3.0 s wall, 1.5 s CPU, measured here; the Azure CLI test's setup 9 s alone, 74 s with
pip in a loaded full run). What README tells users to run is pip, unchanged. No bytecode is compiled up front: each run writes the bytecode of what it imports
(caching_bytecode)."""

import subprocess
import sys
from pathlib import Path

from uv import find_uv_bin


def make(venv: Path, *requirements: str, timeout: float = 1800) -> Path:
    """A fresh venv at `venv` (with pip in it, as `python -m venv` makes one) holding `requirements`: its python.
    `--native-tls`: the machine's certificates, as pip's (an index behind a proxy of its own CA)."""
    uv = find_uv_bin()
    made = subprocess.run([uv, "venv", "--quiet", "--seed", "--clear", "--python", sys.executable, str(venv)],
                          capture_output=True, text=True, timeout=300)
    assert made.returncode == 0, f"uv venv {venv}:\n{made.stderr[-3000:]}"
    python = venv / "bin" / "python"
    done = subprocess.run([uv, "pip", "install", "--quiet", "--native-tls", "--python", str(python), *requirements],
                          capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, f"{' '.join(requirements)} did not install from PyPI:\n{done.stderr[-3000:]}"
    return python


def once(venv: Path, *requirements: str, timeout: float = 1800) -> Path:
    """`make`, unless a venv made so is there already (a marker file says it was finished): its python."""
    marker = venv / ".installed"
    if not marker.exists():
        make(venv, *requirements, timeout=timeout)
        marker.touch()
    return venv / "bin" / "python"


def caching_bytecode(env: dict[str, str]) -> dict[str, str]:
    """An environment in which a venv made without compiling writes the bytecode of what it imports (once): compiling
    every module of azure-cli or an SDK release costs a loaded run minutes of CPU, most of it never read."""
    return {k: v for k, v in env.items() if k != "PYTHONDONTWRITEBYTECODE"}
