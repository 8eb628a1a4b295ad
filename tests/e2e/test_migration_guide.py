"""docs/migrating.md's test, run as a user would run it against amlemu: its own pytest process, the environment
`amlemu env` sets plus the three workspace variables the guide exports, nothing else changed."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.e2e
EXAMPLE = Path(__file__).resolve().parents[2] / "docs" / "examples" / "test_train_job.py"
# A service principal in the developer's environment would come first in DefaultAzureCredential's chain.
SERVICE_PRINCIPAL = ("AZURE_CLIENT_ID", "AZURE_CLIENT_SECRET", "AZURE_TENANT_ID", "AZURE_CLIENT_CERTIFICATE_PATH")


def test_the_migration_guides_test_passes_against_amlemu(stack, tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in SERVICE_PRINCIPAL} | stack.env_vars() | {
        "AZURE_SUBSCRIPTION_ID": stack.subscription, "AZURE_RESOURCE_GROUP": stack.resource_group,
        "AZUREML_WORKSPACE_NAME": stack.workspace}
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--basetemp",
                          str(tmp_path / "pytest"), str(EXAMPLE)], env=env, cwd=tmp_path, capture_output=True,
                         text=True, timeout=540)
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
    assert "1 passed" in run.stdout
