"""MLflow's model registry under the workspace's tracking URI is the workspace's own models, as in Azure:
`mlflow.<flavor>.log_model(..., registered_model_name=...)` and `mlflow.register_model` make an `mlflow_model`
version that `ml_client.models.get` finds, its files the run's artifacts."""

import json
from datetime import datetime

from emulator.domain.assets import versioned
from emulator.domain.ids import WorkspaceRef
from emulator.domain.jobs import tracking
from emulator.errors import EmulatorError
from emulator.services import assets
from emulator.store.repositories import Repository
from emulator.store.tables import AssetVersion
from emulator.tracking.mlflow_server import Answer


def _ms(moment: datetime) -> int:
    return int(moment.timestamp() * 1000)


def _answer(message: dict, status: int = 200) -> Answer:
    return Answer(status, json.dumps(message).encode(), "application/json")


def _version(row: AssetVersion) -> dict:
    return tracking.model_version(row.name, row.version, _ms(row.created_at), row.body.get("modelUri", ""),
                                  row.body.get("jobName"), row.body.get("tags"))


def serve(repo: Repository, ref: WorkspaceRef, route: str, params: dict, message: dict | None, now: datetime,
          data_dir) -> Answer:
    message = {**params, **(message or {})}
    if route.endswith("/search"):
        return _search(repo, ref, route, message)
    name = str(message.get("name") or "")
    if not name:
        return _answer(tracking.mlflow_error("INVALID_PARAMETER_VALUE", "Missing value for required parameter "
                                             "'name'."), 400)
    rows = assets.versions(repo, ref, assets.MODELS, name)
    if route == "registered-models/create":
        if rows:
            return _answer(tracking.mlflow_error("RESOURCE_ALREADY_EXISTS", f"Registered Model (name={name}) "
                                                 "already exists."), 400)
        return _answer({"registered_model": tracking.registered_model(name, _ms(now), None)})
    if route == "registered-models/get":
        if not rows:
            return _not_found(f"Registered Model with name={name} not found")
        return _answer({"registered_model": tracking.registered_model(rows[0].name, _ms(rows[0].created_at),
                                                                      _version(rows[-1]))})
    if route == "registered-models/get-latest-versions":
        return _latest(name, rows, message.get("stages") or [])
    if route == "model-versions/get":
        found = [r for r in rows if r.version == str(message.get("version"))]
        return _answer({"model_version": _version(found[0])}) if found else _not_found(
            f"Model Version (name={name}, version={message.get('version')}) not found")
    if route == "model-versions/create":
        return _create_version(repo, ref, name, rows, message, now, data_dir)
    return _answer(tracking.mlflow_error("ENDPOINT_NOT_FOUND", f"amlemu serves {', '.join(tracking.REGISTRY_ROUTES)} "
                                         "of MLflow's model registry; read models with ml_client.models."), 404)


def _latest(name: str, rows: list[AssetVersion], stages: list[str] | str) -> Answer:
    """Workspace models have no MLflow stage: each is in stage None."""
    if not rows:
        return _not_found(f"Registered Model with name={name} not found")
    stages = [stages] if isinstance(stages, str) else stages
    return _answer({"model_versions": [_version(rows[-1])] if not stages or "None" in stages else []})


def _search(repo: Repository, ref: WorkspaceRef, route: str, message: dict) -> Answer:
    """A page of the workspace's active models (or their versions) the filter keeps, by name; the page token is
    where the next page starts."""
    try:
        keeps = tracking.search_filter(str(message.get("filter") or ""))
        start, size = int(message.get("page_token") or 0), int(message.get("max_results") or 100)
    except ValueError as exc:
        return _answer(tracking.mlflow_error("INVALID_PARAMETER_VALUE", str(exc)), 400)
    models = sorted(assets.containers(repo, ref, assets.MODELS, "ActiveOnly").values(), key=lambda rows: rows[0].name)
    if route == "registered-models/search":
        found = [tracking.registered_model(rows[0].name, _ms(rows[0].created_at), _version(rows[-1]))
                 for rows in models]
        key = "registered_models"
    else:
        found = [_version(row) for rows in models for row in reversed(rows)]
        key = "model_versions"
    found = [obj for obj in found if keeps(obj)]
    page = {key: found[start:start + size]}
    if start + size < len(found):
        page["next_page_token"] = str(start + size)
    return _answer(page)


def _not_found(message: str) -> Answer:
    return _answer(tracking.mlflow_error("RESOURCE_DOES_NOT_EXIST", message), 404)


def _create_version(repo: Repository, ref: WorkspaceRef, name: str, rows: list[AssetVersion], message: dict,
                    now: datetime, data_dir) -> Answer:
    source = tracking.model_source(str(message.get("source") or ""))
    props = {"modelUri": source, "modelType": "mlflow_model"}
    if message.get("run_id"):
        props["jobName"] = message["run_id"]
    if message.get("description"):
        props["description"] = message["description"]
    try:
        with repo.session.begin_nested():  # a refused version leaves nothing behind
            row, _ = assets.put(repo, ref, assets.MODELS, name, versioned.next_version([r.version for r in rows]),
                                {"properties": props}, now, data_dir)
    except EmulatorError as exc:
        return _answer(tracking.mlflow_error("INVALID_PARAMETER_VALUE", exc.message), 400)
    return _answer({"model_version": _version(row)})
