"""The image a model server runs: the deployment's environment image plus the Azure ML inference server
(azureml-inference-server-http, from PyPI), built once per environment image. Pure."""

import hashlib
import hmac
import json

SERVER_PACKAGE = "azureml-inference-server-http==1.5.1"
REPOSITORY = "amlemu/serve"
LABEL = "amlemu.serving"
ENTRYPOINT = "/usr/local/bin/amlemu-serve"
PORT = 5001  # Azure's inference server port
APP_ROOT = "/var/azureml-app"
MODELS_ROOT = f"{APP_ROOT}/azureml-models"
GUARD = "/usr/local/lib/amlemu-serve-gunicorn.py"
KEY_HEADER = "x-amlemu-server-key"
KEY_ENV = "AMLEMU_SERVER_KEY"
# "device:inode<TAB>path" lines, one per mount of the model and code: the engine resolves a mount's source when the
# container starts, so a job writing where a model lives could swap a folder for a link after the controller's
# check; a mount shows the device and inode of what was really mounted, which no swap can fake.
MOUNT_CHECKS_ENV = "AMLEMU_MOUNT_CHECKS"
# The model server's start script: the inference server on the user's scoring script, its output to the log
# file in the deployment's log folder (which getLogs serves), behind the guard below (gunicorn reads its config
# file from GUNICORN_CMD_ARGS; azmlinfsrv runs gunicorn in its own process).
START_SCRIPT = ("#!/bin/sh\n"
                # Each mount must be what the controller checked (see MOUNT_CHECKS_ENV), or the server stops.
                f'printf "%s\\n" "${MOUNT_CHECKS_ENV}" | while IFS="$(printf "\\t")" read -r want path; do\n'
                '  [ -z "$path" ] || [ "$(stat -c %d:%i -- "$path")" = "$want" ] || {\n'
                '    echo "amlemu: $path is not what was laid out for it (a link swapped in?); the server stops."\n'
                '    exit 97; }\n'
                'done >>"${AMLEMU_LOG_FILE:-/dev/stdout}" 2>&1 || exit 97\n'
                f'export GUNICORN_CMD_ARGS="--config {GUARD}"\n'
                'exec azmlinfsrv --entry_script "$AZUREML_ENTRY_SCRIPT" --port 5001 '
                '>>"${AMLEMU_LOG_FILE:-/dev/stdout}" 2>&1\n')
# The host reaches every container on a Docker bridge, so the scoring network alone cannot keep callers out: a
# model server answers only requests carrying its deployment's key, which the scoring router and the controller's
# probes add. The key leaves the environment before the workers (the user's code) start.
GUARD_CONFIG = f'''"""gunicorn config of amlemu's model servers: only the scoring router reaches the inference server."""
import hmac
import os

_KEY = os.environ.pop("{KEY_ENV}", "").encode()
_REFUSED = (b'{{"error": {{"code": "Forbidden", "message": "A model server answers only through its online '
            b'endpoint\\'s scoring URL."}}}}')


def post_worker_init(worker):
    app = worker.wsgi

    def guarded(environ, start_response):
        given = environ.get("HTTP_{KEY_HEADER.upper().replace("-", "_")}", "").encode("latin-1")
        if _KEY and hmac.compare_digest(given, _KEY):
            return app(environ, start_response)
        start_response("403 Forbidden", [("Content-Type", "application/json"),
                                         ("Content-Length", str(len(_REFUSED)))])
        return [_REFUSED]
    worker.wsgi = guarded
'''
_RECIPE = "2"  # part of the hash: a change to how serving images are built rebuilds them all


def _digest(environment_image: str) -> str:
    recipe = [_RECIPE, environment_image, SERVER_PACKAGE, START_SCRIPT, GUARD_CONFIG]
    return hashlib.sha256(json.dumps(recipe).encode()).hexdigest()[:16]


def mount_checks(expected: dict[str, str]) -> str:
    """MOUNT_CHECKS_ENV's value: container path -> the 'device:inode' its mount must show."""
    return "\n".join(f"{identity}\t{path}" for path, identity in expected.items())


def server_key(secret: bytes, deployment_key: str) -> str:
    """A deployment's model-server key: derived from the emulator's secret, so the controller and the router
    agree on it without storing it, and one deployment's code cannot call another's servers with its own."""
    return hmac.new(secret, f"model-server:{deployment_key}".encode(), "sha256").hexdigest()[:32]


def image_tag(environment_image: str) -> str:
    return f"{REPOSITORY}:{_digest(environment_image)}"


def dockerfile(environment_image: str) -> str:
    """Built on the local environment image (never pulled); the start script comes in the build context."""
    return (f"# amlemu model server: {environment_image} plus the Azure ML inference server\n"
            f"FROM {environment_image}\n"
            f"RUN PIP_ROOT_USER_ACTION=ignore pip install --no-cache-dir '{SERVER_PACKAGE}'\n"
            f"COPY amlemu-serve {ENTRYPOINT}\n"
            f"COPY amlemu-serve-gunicorn.py {GUARD}\n"
            f"RUN chmod 0755 {ENTRYPOINT} && chmod 0644 {GUARD}\n"
            f"LABEL {LABEL}={_digest(environment_image)}\n")


def model_dir(name: str, version: str) -> str:
    """AZUREML_MODEL_DIR, as Azure sets it: the model's files are under it by their own base name."""
    return f"{MODELS_ROOT}/{name}/{version}"
