"""The stand-ins `make up` builds run what jobs written for Azure expect of their base images."""

import subprocess

import pytest

from emulator.domain.assets.images import AZUREML_STAND_IN, PYTHON_STAND_IN

pytestmark = pytest.mark.docker


def _run(image: str, script: str) -> str:
    result = subprocess.run(["docker", "run", "--rm", "--network", "none", image, "sh", "-c", script],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_python_slim_stand_in_has_python_and_pip_on_path():
    out = _run(PYTHON_STAND_IN, "python --version && pip --version && python -c 'import venv, ssl, sqlite3'")
    assert "Python 3.11" in out and "pip" in out


def test_azureml_stand_in_has_open_mpi_4_and_python():
    out = _run(AZUREML_STAND_IN, "mpirun --version && mpicc --showme:version && python --version")
    assert "Open MPI) 4.1" in out and "Python 3" in out
    # mpirun really starts ranks (two processes here; the multi-node sample comes with the jobs).
    ranks = _run(AZUREML_STAND_IN, "mpirun -np 2 --oversubscribe hostname | wc -l").strip()
    assert ranks == "2"
