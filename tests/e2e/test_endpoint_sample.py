"""The blue/green sample as a user runs it: `python deploy.py NAME` in a new process with the `amlemu env`
variables, then the endpoint it leaves called with a plain HTTP client and deleted."""

import ast
import os
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from emulator.runtime.docker import DockerRuntime
from tests.waiting import wait_until

pytestmark = pytest.mark.e2e
SAMPLE = Path(__file__).parents[2] / "sample_jobs" / "sklearn-endpoint"
NAME = "e2e-flowers"


def _printed(out: str, label: str):
    """What the script printed after `label`: a JSON answer or a Python dict of counts."""
    line = next(line for line in out.splitlines() if label in line)  # after the SDK poller's dots, maybe
    return ast.literal_eval(line.split(label, 1)[1].strip())


def _servers():
    return DockerRuntime().list({"amlemu.stack": os.environ["AMLEMU_STACK"], "amlemu.endpoint": NAME})


def test_the_blue_green_sample_trains_deploys_and_moves_traffic(ml_client):
    result = subprocess.run([sys.executable, "deploy.py", NAME], cwd=SAMPLE, env=os.environ, capture_output=True,
                            text=True, timeout=1500)
    out = result.stdout
    assert result.returncode == 0, out[-3000:] + result.stderr[-3000:]
    assert _printed(out, "blue answers:")["deployment"] == "blue"
    assert _printed(out, "green, pinned:")["deployment"] == "green"
    split = _printed(out, "200 requests at 90/10:")
    assert split["blue"] > split.get("green", 0) > 0 and sum(split.values()) == 200, split
    assert _printed(out, "50 requests at 0/100:") == {"green": 50}

    endpoint = ml_client.online_endpoints.get(NAME)
    assert [d.name for d in ml_client.online_deployments.list(NAME)] == ["green"]
    key = ml_client.online_endpoints.get_keys(NAME).primary_key
    answer = httpx.post(endpoint.scoring_uri, content=(SAMPLE / "sample-request.json").read_bytes(),
                        headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json"}, timeout=30)
    assert answer.json() == {"predictions": ["setosa", "virginica"], "deployment": "green"}
    assert "loaded" in ml_client.online_deployments.get_logs("green", NAME, lines=200)

    ml_client.online_endpoints.begin_delete(NAME).result()
    wait_until(lambda: _servers() == [], timeout=60, message="the sample's model servers to go")
