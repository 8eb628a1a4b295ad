"""MLflow tracking as Azure ML serves it: the workspace's tracking URI, the job as its MLflow run, and how the
MLflow server's answers are turned into Azure's. Pure.

- The tracking URI is `azureml://<host>/mlflow/v1.0<workspace id>`; the `azureml-mlflow` plugin calls
  `https://<host>/mlflow/v2.0<workspace id>/api/2.0/mlflow/...` (MLflow's own REST API) and RunHistory's artifact
  routes on the same host.
- In Azure a job's name is its MLflow run id. The MLflow server makes ids of its own, so the api maps them: a run
  id in a request that names a job becomes that job's MLflow run, and the MLflow id in an answer becomes the job's
  name again. A run no job stands behind keeps MLflow's id.
- A run's artifacts are RunHistory's (the job's artifact folder, ExperimentRun/dcid.<run>): its artifact_uri is
  the azureml:// form the plugin's artifact repository reads.
"""

import hashlib
import re
from collections.abc import Callable, Iterator
from typing import Any

RUN_ID_KEYS = ("run_id", "run_uuid")
# What the api passes on to the MLflow server: its tracking API (and Azure's preview routes), never MLflow's own
# workspace, artifact or admin routes, which would reach past the caller's workspace.
_FORWARDED = re.compile(r"^/api/2\.0/(?:preview/)?mlflow/[A-Za-z0-9_-]+(?:/[A-Za-z0-9_-]+)*$")
# Azure ML job statuses as MLflow run statuses (RUNNING, SCHEDULED, FINISHED, FAILED, KILLED).
_RUN_STATUS = {"Completed": "FINISHED", "Failed": "FAILED", "Canceled": "KILLED", "Running": "RUNNING",
               "Finalizing": "RUNNING", "CancelRequested": "RUNNING"}


def forwarded(path: str) -> bool:
    """Whether `path` (under the workspace's tracking URI) is one of MLflow's tracking routes: no other API
    version, no dot segments, nothing outside /api/2.0/mlflow/."""
    return _FORWARDED.fullmatch(path) is not None


def mlflow_workspace(workspace_key: str) -> str:
    """The MLflow workspace that holds one Azure ML workspace's experiments: a name MLflow accepts (lower-case
    letters, digits, '-'), the same for every spelling of the workspace's id."""
    return "aml-" + hashlib.sha256(workspace_key.lower().encode()).hexdigest()[:24]


def tracking_uri(host: str, workspace_arm_id: str) -> str:
    return f"azureml://{host}/mlflow/v1.0{workspace_arm_id}"


def artifact_uri(host: str, workspace_arm_id: str, experiment_id: str, run_id: str) -> str:
    """What the plugin parses into (experiment, run) for RunHistory's artifact routes."""
    return f"azureml://{host}/mlflow/v2.0{workspace_arm_id}/experiments/{experiment_id}/runs/{run_id}/artifacts"


def run_status(job_status: str) -> str:
    return _RUN_STATUS.get(job_status, "SCHEDULED")


def _objects(message: Any) -> Iterator[dict]:
    """Every JSON object in `message`, at any depth."""
    if isinstance(message, dict):
        yield message
        for item in message.values():
            yield from _objects(item)
    elif isinstance(message, list):
        for item in message:
            yield from _objects(item)


def run_ids(message: Any) -> set[str]:
    """Every run id a request or an answer names, at any depth."""
    return {value for obj in _objects(message) for key, value in obj.items()
            if key in RUN_ID_KEYS and isinstance(value, str)}


def renamed(message: Any, names: dict[str, str]) -> Any:
    """`message` with each run id in `names` replaced, at any depth (the rest as it was)."""
    if isinstance(message, dict):
        return {key: names.get(item, item) if key in RUN_ID_KEYS and isinstance(item, str) else renamed(item, names)
                for key, item in message.items()}
    if isinstance(message, list):
        return [renamed(item, names) for item in message]
    return message


def run_infos(message: Any) -> list[dict]:
    """The run info objects of an answer (a run's `info`, or each of a search's runs), to be told Azure's truth."""
    return [obj for obj in _objects(message) if {"run_id", "experiment_id", "lifecycle_stage"} <= obj.keys()]


def told(info: dict, artifacts: Callable[[str, str], str], job: dict | None) -> None:
    """A run's info as Azure tells it: artifacts in RunHistory; a job's run has the job's status and times
    (`job`: {"status", "start_time", "end_time"} in MLflow's units), whatever its script reported."""
    info["artifact_uri"] = artifacts(info["experiment_id"], info["run_id"])
    if job is not None:
        info["status"] = run_status(job["status"])
        info.update({k: v for k, v in job.items() if k in ("start_time", "end_time") and v is not None})


# MLflow's model registry, answered by the workspace's models (as Azure does): the routes amlemu serves.
REGISTRY_ROUTES = ("registered-models/create", "registered-models/get", "model-versions/create", "model-versions/get")
_ARTIFACT_SOURCE = re.compile(r"^azureml://[^/]+/mlflow/v[12]\.0/.+/runs/([^/]+)/artifacts/(.+)$")


def registry_route(path: str) -> str | None:
    """The registry route `path` (under /api/2.0/mlflow/) names, if it is one."""
    for prefix in ("/api/2.0/mlflow/", "/api/2.0/preview/mlflow/"):
        if path.startswith(prefix) and path[len(prefix):].startswith(("registered-models/", "model-versions/")):
            return path[len(prefix):]
    return None


def model_source(source: str) -> str:
    """A registered version's files as the workspace's models name them: `runs:/<run>/<path>` as given, or the run
    artifact URI MLflow resolves it to, made `runs:/` again."""
    if match := _ARTIFACT_SOURCE.match(source):
        return f"runs:/{match[1]}/{match[2].strip('/')}"
    return source


def model_version(name: str, version: str, created_ms: int, source: str, run_id: str | None) -> dict:
    return {"name": name, "version": version, "creation_timestamp": created_ms, "last_updated_timestamp": created_ms,
            "current_stage": "None", "source": source, "run_id": run_id or "", "status": "READY"}


def registered_model(name: str, created_ms: int, latest: dict | None) -> dict:
    return {"name": name, "creation_timestamp": created_ms, "last_updated_timestamp": created_ms,
            **({"latest_versions": [latest]} if latest else {})}


def mlflow_error(code: str, message: str) -> dict:
    return {"error_code": code, "message": message}
