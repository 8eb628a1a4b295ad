"""Runs in a fresh interpreter with the `amlemu env` variables: a command job on compute="local" through the SDK
(no controller runs: it is started, not run), then a sweep on local compute; prints JSON of what the SDK saw.
TMPDIR is the work dir, where the SDK unzips the Execution Service's answer.

Usage: python local_probe.py WORK_DIR
"""

import json
import os
import sys
import tempfile
from pathlib import Path

from azure.ai.ml import MLClient, command
from azure.ai.ml.entities import Environment
from azure.ai.ml.sweep import Choice
from azure.identity import DefaultAzureCredential


def main(work: str) -> None:
    ml = MLClient(DefaultAzureCredential(), os.environ["AMLEMU_SUBSCRIPTION_ID"],
                  os.environ["AMLEMU_RESOURCE_GROUP"], os.environ["AMLEMU_WORKSPACE"])
    (Path(work) / "src").mkdir()
    (Path(work) / "src" / "main.py").write_text("print('hello from local')\n")
    job = command(code=str(Path(work) / "src"), command="python main.py", compute="local",
                  environment=Environment(image="python:3.11-slim"), experiment_name="local-exp")
    made = ml.jobs.create_or_update(job, tags={"kind": "local"})
    read = ml.jobs.get(made.name)
    unzipped = Path(tempfile.gettempdir(), "azureml_runs", made.name)
    seen = {"name": made.name, "compute": made.compute, "status": read.status, "read_compute": read.compute,
            "tags": read.tags, "services": sorted(read.services or {}),
            "env": read.environment_variables.get("AZUREML_COMPUTE_USE_COMMON_RUNTIME"),
            "unzipped": sorted(p.relative_to(unzipped).as_posix() for p in unzipped.rglob("*")),
            "listed_computes": [c.name for c in ml.compute.list()]}
    try:
        trial = command(code=str(Path(work) / "src"), command="python main.py --m ${{inputs.m}}", inputs={"m": 1},
                        compute="local", environment=Environment(image="python:3.11-slim"))
        ml.jobs.create_or_update(trial(m=Choice([1, 2])).sweep(sampling_algorithm="random", primary_metric="acc",
                                                               goal="maximize"))
        seen["sweep"] = None
    except Exception as exc:  # noqa: BLE001 (whatever the SDK raises, its message is what the user sees)
        seen["sweep"] = f"{type(exc).__name__}: {exc}"
    seen["jobs"] = sorted(j.name for j in ml.jobs.list())
    print(json.dumps(seen))


if __name__ == "__main__":
    main(sys.argv[1])
