"""MLflow tracking as Azure ML serves it: the workspace's tracking URI, the job as its MLflow run, and how the
MLflow server's answers are turned into Azure's. Pure.

- The tracking URI is `azureml://<host>/mlflow/v1.0<workspace id>`; the `azureml-mlflow` plugin calls
  `https://<host>/mlflow/v2.0<workspace id>/api/2.0/mlflow/...` (MLflow's own REST API) and RunHistory's artifact
  routes on the same host.
- In Azure a job's name is its MLflow run id. The MLflow server makes ids of its own, so the api maps them: a run
  id in a request that names a job becomes that job's MLflow run, and the MLflow id in an answer becomes the job's
  name again. A run no job stands behind keeps MLflow's id.
- Azure's experiment ids are GUIDs, and a job knows its own (MLFLOW_EXPERIMENT_ID) before MLflow has the
  experiment: an experiment's id is a GUID made from its workspace and name, mapped to MLflow's the same way.
- A run's artifacts are RunHistory's (the job's artifact folder, ExperimentRun/dcid.<run>): its artifact_uri is
  the azureml:// form the plugin's artifact repository reads.
"""

import hashlib
import re
import uuid
from collections.abc import Callable, Iterator
from typing import Any

RUN_ID_KEYS = ("run_id", "run_uuid")
EXPERIMENT_ID_KEYS = ("experiment_id", "experiment_ids")  # one id, or a list of them (runs/search)
_EXPERIMENTS = uuid.UUID("7f0c2d7e-8a51-4f6b-9a35-3c1e2b9d4a60")  # amlemu's namespace for experiment GUIDs
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


def experiment_guid(workspace_key: str, name: str) -> str:
    """An experiment's id as Azure shows it: the same GUID for the same workspace and name, wherever asked."""
    return str(uuid.uuid5(_EXPERIMENTS, f"{workspace_key.lower()}\n{name}"))


def _ids(message: Any, keys: tuple[str, ...]) -> set[str]:
    found = set()
    for obj in _objects(message):
        for key, value in obj.items():
            if key in keys:
                found |= {v for v in (value if isinstance(value, list) else [value]) if isinstance(v, str)}
    return found


def run_ids(message: Any) -> set[str]:
    """Every run id a request or an answer names, at any depth."""
    return _ids(message, RUN_ID_KEYS)


def experiment_ids(message: Any) -> set[str]:
    """Every experiment id a request or an answer names, at any depth."""
    return _ids(message, EXPERIMENT_ID_KEYS)


def _one(value: Any, names: dict[str, str]) -> Any:
    if isinstance(value, str):
        return names.get(value, value)
    if isinstance(value, list):
        return [names.get(v, v) if isinstance(v, str) else v for v in value]
    return value


def renamed(message: Any, runs: dict[str, str], experiments: dict[str, str] | None = None) -> Any:
    """`message` with each run id in `runs` and experiment id in `experiments` replaced, at any depth."""
    experiments = experiments or {}
    if isinstance(message, dict):
        return {key: _one(item, runs) if key in RUN_ID_KEYS else _one(item, experiments)
                if key in EXPERIMENT_ID_KEYS else renamed(item, runs, experiments) for key, item in message.items()}
    if isinstance(message, list):
        return [renamed(item, runs, experiments) for item in message]
    return message


def renamed_params(params: list[tuple[str, str]], runs: dict[str, str],
                   experiments: dict[str, str]) -> list[tuple[str, str]]:
    """A GET's query parameters, renamed as `renamed` renames a body."""
    return [(k, runs.get(v, v) if k in RUN_ID_KEYS else experiments.get(v, v) if k in EXPERIMENT_ID_KEYS else v)
            for k, v in params]


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
REGISTRY_ROUTES = ("registered-models/create", "registered-models/get", "registered-models/search",
                   "registered-models/get-latest-versions", "model-versions/create", "model-versions/get",
                   "model-versions/search")
# A search filter as Azure takes it: clauses on name, a version's run_id or a tag (`tag.key`, `tags.\`a.b\``),
# joined by AND. MLflow's own client adds tag.`mlflow.prompt.is_prompt` != 'true' to every model search.
_CLAUSE = re.compile(r"^\s*(name|run_id|tags?\.(?:`[^`]+`|[\w.-]+))\s*(=|!=|LIKE|ILIKE)\s*"
                     r"(?:'([^']*)'|\"([^\"]*)\")\s*$", re.IGNORECASE)
_ARTIFACT_SOURCE = re.compile(r"^azureml://[^/]+/mlflow/v[12]\.0/.+/runs/([^/]+)/artifacts/(.+)$")


def registry_route(path: str) -> str | None:
    """The registry route `path` (under /api/2.0/mlflow/) names, if it is one."""
    for prefix in ("/api/2.0/mlflow/", "/api/2.0/preview/mlflow/"):
        if path.startswith(prefix) and path[len(prefix):].startswith(("registered-models/", "model-versions/")):
            return path[len(prefix):]
    return None


def search_filter(text: str) -> Callable[[dict], bool]:
    """What a registry search's `filter` keeps, for an object with `name` (and `run_id`, `tags` as MLflow lists
    them); a tag it lacks is ''. ValueError names what is not understood."""
    tests = []
    for clause in re.split(r"\s+AND\s+", text.strip(), flags=re.IGNORECASE) if text.strip() else []:
        match = _CLAUSE.fullmatch(clause)
        if match is None:
            raise ValueError(f"unsupported filter {clause!r}: use name = '...', name LIKE '...%' or run_id = '...', "
                             "joined by AND")
        key, op, value = match[1], match[2].upper(), match[3] if match[3] is not None else match[4]
        tests.append((key.split(".", 1)[1].strip("`") if "." in key else key.lower(), "." in key, op, value))
    return lambda obj: all(_holds(_field(obj, key, is_tag), op, value) for key, is_tag, op, value in tests)


def _field(obj: dict, key: str, is_tag: bool) -> str:
    if is_tag:
        return next((str(t.get("value")) for t in obj.get("tags") or [] if t.get("key") == key), "")
    return str(obj.get(key) or "")


def _holds(actual: str, op: str, value: str) -> bool:
    if op in ("=", "!="):
        return (actual == value) == (op == "=")
    pattern = "".join(".*" if c == "%" else "." if c == "_" else re.escape(c) for c in value)
    return re.fullmatch(pattern, actual, re.IGNORECASE if op == "ILIKE" else 0) is not None


def model_source(source: str) -> str:
    """A registered version's files as the workspace's models name them: `runs:/<run>/<path>` as given, or the run
    artifact URI MLflow resolves it to, made `runs:/` again."""
    if match := _ARTIFACT_SOURCE.match(source):
        return f"runs:/{match[1]}/{match[2].strip('/')}"
    return source


def _tags(tags: dict[str, str] | None) -> dict:
    return {"tags": [{"key": k, "value": v} for k, v in tags.items()]} if tags else {}


def model_version(name: str, version: str, created_ms: int, source: str, run_id: str | None,
                  tags: dict[str, str] | None = None) -> dict:
    return {"name": name, "version": version, "creation_timestamp": created_ms, "last_updated_timestamp": created_ms,
            "current_stage": "None", "source": source, "run_id": run_id or "", "status": "READY", **_tags(tags)}


def registered_model(name: str, created_ms: int, latest: dict | None) -> dict:
    return {"name": name, "creation_timestamp": created_ms, "last_updated_timestamp": created_ms,
            **({"latest_versions": [latest]} if latest else {})}


def mlflow_error(code: str, message: str) -> dict:
    return {"error_code": code, "message": message}
