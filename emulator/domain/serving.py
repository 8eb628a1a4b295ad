"""The image a model server runs: the deployment's environment image plus the Azure ML inference server
(azureml-inference-server-http, from PyPI), built once per environment image. Pure."""

import hashlib
import json

SERVER_PACKAGE = "azureml-inference-server-http==1.5.1"
REPOSITORY = "amlemu/serve"
LABEL = "amlemu.serving"
ENTRYPOINT = "/usr/local/bin/amlemu-serve"
PORT = 5001  # Azure's inference server port
APP_ROOT = "/var/azureml-app"
MODELS_ROOT = f"{APP_ROOT}/azureml-models"
# The model server's start script: the inference server on the user's scoring script, its output to the log
# file in the deployment's log folder (which getLogs serves).
START_SCRIPT = ("#!/bin/sh\n"
                'exec azmlinfsrv --entry_script "$AZUREML_ENTRY_SCRIPT" --port 5001 '
                '>>"${AMLEMU_LOG_FILE:-/dev/stdout}" 2>&1\n')
_RECIPE = "1"  # part of the hash: a change to how serving images are built rebuilds them all


def _digest(environment_image: str) -> str:
    return hashlib.sha256(json.dumps([_RECIPE, environment_image, SERVER_PACKAGE, START_SCRIPT]).encode()).hexdigest()[:16]


def image_tag(environment_image: str) -> str:
    return f"{REPOSITORY}:{_digest(environment_image)}"


def dockerfile(environment_image: str) -> str:
    """Built on the local environment image (never pulled); the start script comes in the build context."""
    return (f"# amlemu model server: {environment_image} plus the Azure ML inference server\n"
            f"FROM {environment_image}\n"
            f"RUN PIP_ROOT_USER_ACTION=ignore pip install --no-cache-dir '{SERVER_PACKAGE}'\n"
            f"COPY amlemu-serve {ENTRYPOINT}\n"
            f"RUN chmod 0755 {ENTRYPOINT}\n"
            f"LABEL {LABEL}={_digest(environment_image)}\n")


def model_dir(name: str, version: str) -> str:
    """AZUREML_MODEL_DIR, as Azure sets it: the model's files are under it by their own base name."""
    return f"{MODELS_ROOT}/{name}/{version}"
