"""Runs in a fresh interpreter with the `amlemu env` variables: MLClient(..., registry_name="azureml") reads the
curated environments the way a user's code does; prints JSON of what it saw, errors as their messages.

Usage: python registry_probe.py
"""

import json
import os

from azure.ai.ml import MLClient
from azure.ai.ml.entities import Environment
from azure.identity import DefaultAzureCredential


def _shown(env: Environment) -> dict:
    return {"name": env.name, "version": env.version, "id": env.id, "image": env.image,
            "conda": env.conda_file, "tags": env.tags, "latest": getattr(env, "latest_version", None)}


def _error(call) -> str:
    try:
        call()
    except Exception as err:  # the SDK's own exception types vary by path: the message is what a user reads
        return f"{type(err).__name__}: {err}"
    return "no error"


def main() -> None:
    # The SDK ignores the subscription and resource group given for a registry: discovery supplies its own.
    ml = MLClient(DefaultAzureCredential(), os.environ["AMLEMU_SUBSCRIPTION_ID"], os.environ["AMLEMU_RESOURCE_GROUP"],
                  registry_name="azureml")
    seen = {"by_label": _shown(ml.environments.get("sklearn-1.5", label="latest")),
            "by_version": _shown(ml.environments.get("sklearn-1.5", version="1")),
            "listed": sorted(e.name for e in ml.environments.list()),
            "list_latest": {e.name: e.latest_version for e in ml.environments.list()},
            "versions": [_shown(e) for e in ml.environments.list(name="lightgbm-3.3")],
            "models": [m.name for m in ml.models.list()],
            "unknown_name": _error(lambda: ml.environments.get("sklearn-9.9", label="latest")),
            "unknown_version": _error(lambda: ml.environments.get("sklearn-1.5", version="99")),
            "create": _error(lambda: ml.environments.create_or_update(
                Environment(name="mine", version="1", image="python:3.11-slim"))),
            "archive": _error(lambda: ml.environments.archive("sklearn-1.5", version="1")),
            "unknown_registry": _error(lambda: MLClient(DefaultAzureCredential(), "s", "r", registry_name="contoso"))}
    print(json.dumps(seen))


if __name__ == "__main__":
    main()
