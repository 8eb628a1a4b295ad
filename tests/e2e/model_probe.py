"""Runs inside a venv holding one azure-ai-ml release: a model from a local file (explicit, then server-numbered
version), get latest, list, download; prints JSON.

Usage: python model_probe.py MODEL_FILE MODEL_NAME DOWNLOAD_DIR  (connection from the `amlemu env` variables)
"""

import hashlib
import json
import os
import sys
from pathlib import Path

from azure.ai.ml import MLClient
from azure.ai.ml.entities import Model
from azure.identity import DefaultAzureCredential


def main(model_file: str, name: str, download: str) -> None:
    ml = MLClient(DefaultAzureCredential(), os.environ["AMLEMU_SUBSCRIPTION_ID"],
                  os.environ["AMLEMU_RESOURCE_GROUP"], os.environ["AMLEMU_WORKSPACE"])
    first = ml.models.create_or_update(Model(name=name, version="1", path=model_file))
    second = ml.models.create_or_update(Model(name=name, path=model_file))
    ml.models.download(name, "1", download_path=download)
    print(json.dumps({"versions": [first.version, second.version],
                      "latest": ml.models.get(name, label="latest").version,
                      "listed": sorted(m.version for m in ml.models.list(name=name)),
                      "downloaded": hashlib.sha256((Path(download) / name / Path(model_file).name).read_bytes()).hexdigest()}))


if __name__ == "__main__":
    main(*sys.argv[1:4])
