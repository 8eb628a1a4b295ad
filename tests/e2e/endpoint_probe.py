"""Runs inside a venv holding one azure-ai-ml release: an online endpoint end to end; prints what the SDK saw
as JSON.

Usage: python endpoint_probe.py ENDPOINT_NAME WORKDIR  (connection from the `amlemu env` variables)
"""

import json
import sys
from pathlib import Path

from azure.ai.ml.entities import (
    CodeConfiguration,
    Environment,
    ManagedOnlineDeployment,
    ManagedOnlineEndpoint,
    Model,
    ProbeSettings,
)

from tests.e2e.sdk_calls import ml_client, run

SCORE = "import json\n\ndef init():\n    pass\n\ndef run(raw_data):\n    return {'echo': json.loads(raw_data)}\n"


def main(name: str, workdir: Path) -> None:
    ml = ml_client()
    (workdir / "model").mkdir(parents=True)
    (workdir / "model" / "w.txt").write_text("1")
    (workdir / "src").mkdir()
    (workdir / "src" / "score.py").write_text(SCORE)
    (workdir / "request.json").write_text(json.dumps({"x": 1}))
    model = ml.models.create_or_update(Model(name=f"{name}-model", path=str(workdir / "model")))
    endpoint = ml.online_endpoints.begin_create_or_update(ManagedOnlineEndpoint(name=name, auth_mode="key")).result()
    probe = ProbeSettings(initial_delay=1, period=1)
    deployment = ml.online_deployments.begin_create_or_update(ManagedOnlineDeployment(
        name="blue", endpoint_name=name, model=model, instance_type="Standard_DS2_v2", instance_count=1,
        code_configuration=CodeConfiguration(code=str(workdir / "src"), scoring_script="score.py"),
        environment=Environment(image="python:3.11-slim"), readiness_probe=probe, liveness_probe=probe)).result()
    endpoint.traffic = {"blue": 100}
    endpoint = ml.online_endpoints.begin_create_or_update(endpoint).result()
    out = {"endpoint": [endpoint.provisioning_state, endpoint.auth_mode, endpoint.traffic],
           "deployment": [deployment.provisioning_state, deployment.instance_count, deployment.instance_type],
           "keys": bool(ml.online_endpoints.get_keys(name).primary_key),
           "invoke": json.loads(ml.online_endpoints.invoke(name, request_file=str(workdir / "request.json"))),
           "listed": [d.name for d in ml.online_deployments.list(name)]}
    ml.online_endpoints.begin_delete(name).result()
    out["deleted"] = name not in [e.name for e in ml.online_endpoints.list()]
    print("\n" + json.dumps(out))  # the SDK's pollers print dots without a newline


if __name__ == "__main__":
    run(main, sys.argv[1], Path(sys.argv[2]))
