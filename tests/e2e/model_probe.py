"""Runs inside a venv holding one azure-ai-ml release: a model from a local file (explicit, then server-numbered
version), get latest, list, download; prints JSON.

Usage: python model_probe.py MODEL_FILE MODEL_NAME DOWNLOAD_DIR  (connection from the `amlemu env` variables)
"""

import hashlib
import json
import sys
from pathlib import Path

from azure.ai.ml.entities import Model

from tests.e2e.sdk_calls import ml_client, run


def model_flow(ml, model_file: str, name: str, download: str) -> dict:
    first = ml.models.create_or_update(Model(name=name, version="1", path=model_file))
    second = ml.models.create_or_update(Model(name=name, path=model_file))
    ml.models.download(name, "1", download_path=download)
    return {"versions": [first.version, second.version],
            "latest": ml.models.get(name, label="latest").version,
            "listed": sorted(m.version for m in ml.models.list(name=name)),
            "downloaded": hashlib.sha256((Path(download) / name / Path(model_file).name).read_bytes()).hexdigest()}


def main(model_file: str, name: str, download: str) -> None:
    print(json.dumps(model_flow(ml_client(), model_file, name, download)))


if __name__ == "__main__":
    run(main, *sys.argv[1:4])
