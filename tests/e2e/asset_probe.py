"""Runs inside a venv holding one azure-ai-ml release: a code upload (twice) and environments; prints JSON.

Usage: python asset_probe.py SOURCE_DIR ENV_NAME  (connection from the `amlemu env` variables)
"""

import json
import sys

from azure.ai.ml.entities import Environment
from azure.ai.ml.entities._assets import Code

from tests.e2e.sdk_calls import ml_client, run


def main(source: str, env_name: str) -> None:
    ml = ml_client()
    first = ml._code.create_or_update(Code(path=source))
    second = ml._code.create_or_update(Code(path=source))
    ml.environments.create_or_update(Environment(name=env_name, version="1", image="python:3.11-slim"))
    ml.environments.create_or_update(Environment(name=env_name, version="2", image="python:3.12-slim"))
    anonymous = ml.environments.create_or_update(Environment(image="python:3.11-slim"))
    print(json.dumps({"code": [first.id, second.id, first.path],
                      "latest": ml.environments.get(env_name, label="latest").image,
                      "anonymous": [anonymous.name, anonymous.image]}))


if __name__ == "__main__":
    run(main, sys.argv[1], sys.argv[2])
