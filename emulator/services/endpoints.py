"""Online endpoints and deployments: validate, store, and leave the containers to the controller.

An endpoint's create and update finish at once (keys and traffic are data the scoring router reads from the
store); a deployment's finish when the controller has its containers ready, and deletes when they are gone.
"""

import secrets
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from emulator import confined, tokens
from emulator.domain import payload
from emulator.domain.ids import WorkspaceRef
from emulator.domain.jobs import artifacts
from emulator.domain.registries import ids as registry_ids
from emulator.domain.serving import deployments, endpoints
from emulator.domain.storage import datastores
from emulator.errors import Conflict, NotFound, PathEscape, ValidationFailed
from emulator.services import assets, kubernetes, models, operations, registry_assets
from emulator.settings import Settings
from emulator.store.repositories import Repository
from emulator.store.tables import AssetVersion, OnlineDeployment, OnlineEndpoint, Operation, Workspace

P = "properties"
KEY_TYPES = {"primary": "primaryKey", "secondary": "secondaryKey"}
LOG_READ_LIMIT = 16 << 20  # get_logs reads at most this much of a log
LOGS_DIR = "online"  # under the data directory: online/<endpoint>/<deployment>/<container>.log


def new_key() -> str:
    return secrets.token_urlsafe(24)


# ---------------------------------------------------------------- endpoints

def get_endpoint(repo: Repository, ref: WorkspaceRef, name: str) -> OnlineEndpoint:
    row = repo.online_endpoint(ref.child_id("onlineEndpoints", name))
    if row is None:
        raise NotFound(f"Online endpoint '{name}' was not found in workspace '{ref.name}'.", target="endpointName")
    return row


def _endpoint_body(repo: Repository, ref: WorkspaceRef, body: object, workspace: Workspace, name: str,
                   deployment_names: list[str]) -> dict:
    body = payload.obj(body, "body", required=True)
    payload.finite(body)
    props = payload.obj(body.get(P), P, required=True)
    compute = kubernetes.endpoint_compute(repo, ref, props.get("compute"))  # a Kubernetes online endpoint's
    live = endpoints.traffic(props.get("traffic"), deployment_names, name)
    return {"location": workspace.location if body.get("location") is None else payload.location(body["location"]),
            "tags": payload.tags(body.get("tags")),
            "identity": payload.obj(body.get("identity"), "identity") or {"type": "SystemAssigned"},
            P: {"authMode": endpoints.auth_mode(props.get("authMode")),
                "description": payload.string(props.get("description"), f"{P}.description"),
                "properties": payload.string_map(props.get("properties"), f"{P}.properties"),
                "publicNetworkAccess": props.get("publicNetworkAccess") or "Enabled",
                "traffic": live,
                "mirrorTraffic": endpoints.mirror_traffic(props.get("mirrorTraffic"), live, deployment_names, name),
                **({"compute": compute} if compute else {})}}


def put_endpoint(repo: Repository, ref: WorkspaceRef, workspace: Workspace, name: str, body: object,
                 now: datetime) -> tuple[OnlineEndpoint, Operation, bool]:
    endpoints.endpoint_name(name)
    key = ref.child_id("onlineEndpoints", name).lower()
    row = repo.online_endpoint(key)
    names = [d.name for d in repo.online_deployments(key) if d.provisioning_state != "Deleting"] if row else []
    stored = _endpoint_body(repo, ref, body, workspace, name, names)
    if row is None:
        taken = repo.online_endpoint_named(name)
        if taken is not None:  # scoring URLs name an endpoint alone, as Azure's region-wide DNS names do
            raise Conflict(f"An online endpoint named '{name}' already exists in workspace "
                           f"'{taken.workspace_key.rsplit('/', 1)[-1]}'; endpoint names are unique in a region.",
                           target="endpointName")
        row = OnlineEndpoint(key=key, workspace_key=ref.key, name=name, location=stored["location"], body=stored,
                             keys={"primaryKey": new_key(), "secondaryKey": new_key()},
                             provisioning_state="Succeeded", created_at=now, modified_at=now)
        repo.add(row)
        created = True
    else:
        _not_deleting(row.provisioning_state, f"Online endpoint '{row.name}'", "endpointName")
        row.body, row.modified_at, row.provisioning_state = stored, now, "Succeeded"
        created = False
    op = operations.start(repo, key, "Create" if created else "Update", now)
    operations.finish(repo, key, now)
    return row, op, created


def _not_deleting(state: str, what: str, target: str) -> None:
    if state == "Deleting":
        raise Conflict(f"{what} is being deleted; wait for the deletion to finish.", target=target)


def delete_endpoint(repo: Repository, ref: WorkspaceRef, name: str,
                    now: datetime) -> tuple[OnlineEndpoint, Operation] | None:
    """Its deployments go first (the controller removes their containers), then the endpoint."""
    row = repo.online_endpoint(ref.child_id("onlineEndpoints", name))
    if row is None:
        return None
    row.provisioning_state, row.modified_at = "Deleting", now
    for deployment in repo.online_deployments(row.key):
        deployment.provisioning_state, deployment.modified_at = "Deleting", now
    return row, operations.start(repo, row.key, "Delete", now)


def _require_auth(row: OnlineEndpoint, mode: str, why: str, target: str) -> None:
    if row.body[P]["authMode"] != mode:
        raise ValidationFailed(f"Online endpoint '{row.name}' uses {row.body[P]['authMode']} authentication; {why}",
                               target=target)


def regenerate_key(repo: Repository, ref: WorkspaceRef, name: str, body: object,
                   now: datetime) -> tuple[OnlineEndpoint, Operation]:
    """POST regenerateKeys {"keyType": "Primary"|"Secondary", "keyValue"?}. The SDK sends the current key as
    keyValue; a different value sets the key to it, as Azure does."""
    row = get_endpoint(repo, ref, name)
    body = payload.obj(body, "body", required=True)
    kind = body.get("keyType")
    field = KEY_TYPES.get(kind.lower()) if isinstance(kind, str) else None
    if field is None:
        raise ValidationFailed(f"keyType must be Primary or Secondary, got {kind!r}.", target="keyType")
    _require_auth(row, "Key", "only key-based endpoints have keys to regenerate.", "keyType")
    value = payload.string(body.get("keyValue"), "keyValue")
    fresh = value if value and value != row.keys[field] else new_key()
    row.keys, row.modified_at = {**row.keys, field: fresh}, now
    op = operations.start(repo, row.key, "RegenerateKeys", now)
    operations.finish(repo, row.key, now)
    return row, op


def keys(repo: Repository, ref: WorkspaceRef, name: str) -> dict:
    row = get_endpoint(repo, ref, name)
    _require_auth(row, "Key", "it has no keys: get a token instead (POST .../token).", "endpointName")
    return dict(row.keys)


def token(repo: Repository, ref: WorkspaceRef, name: str, secret: bytes, now: datetime) -> dict:
    """POST token: an AMLToken endpoint's bearer token for its scoring URL."""
    row = get_endpoint(repo, ref, name)
    _require_auth(row, "AMLToken", "tokens are for AMLToken endpoints (use listKeys for key-based ones).",
                  "endpointName")
    issued = int(now.timestamp())
    access_token, expiry = tokens.issue_endpoint_token(secret, row.key, issued)
    return {"accessToken": access_token, "tokenType": "Bearer", "expiryTimeUtc": expiry,
            "refreshAfterTimeUtc": issued + tokens.ENDPOINT_TOKEN_LIFETIME_SECONDS // 2}


# ---------------------------------------------------------------- deployments

def get_deployment(repo: Repository, ref: WorkspaceRef, endpoint: str, name: str) -> OnlineDeployment:
    row = repo.online_deployment(ref.child_id("onlineEndpoints", endpoint) + f"/deployments/{name}")
    if row is None:
        get_endpoint(repo, ref, endpoint)
        raise NotFound(f"Deployment '{name}' was not found in online endpoint '{endpoint}'.",
                       target="deploymentName")
    return row


@dataclass(frozen=True)
class Assets:
    model: AssetVersion
    code: AssetVersion
    environment: AssetVersion


def find_asset(repo: Repository, ref: WorkspaceRef, asset: deployments.AssetRef, target: str) -> AssetVersion:
    """A deployment's model, code or environment: the workspace's, or a registry's (its label pinned now)."""
    if asset.registry is not None:
        named = registry_ids.AssetRef(asset.registry, asset.kind, asset.name, asset.version,
                                      None if asset.version else "latest")
        return registry_assets.find(repo, named, target)
    try:
        return assets.get(repo, ref, asset.kind, asset.name, asset.version)
    except NotFound as exc:
        raise ValidationFailed(f"{target}: {exc.message}", target=target) from exc


def resolve(repo: Repository, ref: WorkspaceRef, stored: dict) -> Assets:
    def found(field: str, target: str) -> AssetVersion:
        return find_asset(repo, ref, deployments.AssetRef(**stored["refs"][field]), target)
    return Assets(found("model", f"{P}.model"), found("code", f"{P}.codeConfiguration.codeId"),
                  found("environment", f"{P}.environmentId"))


def code_dir(ref: WorkspaceRef, code: AssetVersion) -> str:
    """The code snapshot's folder, relative to the data directory."""
    where = datastores.resolve_asset_uri(ref, code.body.get("codeUri"), f"{P}.codeConfiguration.codeId")
    return artifacts.blob_dir(where)


def model_path(ref: WorkspaceRef, model: AssetVersion) -> str:
    """The model's file or folder, relative to the data directory."""
    try:
        return models.relative_path(ref, model)
    except ValidationFailed as exc:
        raise ValidationFailed(exc.message, target=f"{P}.model") from exc


def _check_runnable(settings: Settings, ref: WorkspaceRef, stored: dict, found: Assets) -> None:
    script = stored[P]["codeConfiguration"]["scoringScript"]
    code, model = code_dir(ref, found.code), model_path(ref, found.model)
    for rel, target in ((code, f"{P}.codeConfiguration.codeId"), (model, f"{P}.model")):
        try:  # a job's output may hold links: a model server must not mount what they point at
            confined.source(settings.data_dir, rel)
        except PathEscape as exc:
            raise ValidationFailed(exc.message, target=target) from exc
    if not (settings.data_dir / code / script).is_file():
        raise ValidationFailed(f"The scoring script '{script}' is not in code '{found.code.name}' version "
                               f"'{found.code.version}'.", target=f"{P}.codeConfiguration.scoringScript")
    if not (settings.data_dir / model).exists():
        raise ValidationFailed(f"The files of model '{found.model.name}' version '{found.model.version}' are not in "
                               "the blob store.", target=f"{P}.model")
    if not found.environment.body.get("image"):
        raise ValidationFailed("Environments built from a Docker build context are not supported for online "
                               "deployments by amlemu yet; use an image, with a conda file for pip packages.",
                               target=f"{P}.environmentId")


def put_deployment(repo: Repository, settings: Settings, ref: WorkspaceRef, endpoint: str, name: str, body: object,
                   now: datetime) -> tuple[OnlineDeployment, Operation, bool]:
    parent = get_endpoint(repo, ref, endpoint)
    _not_deleting(parent.provisioning_state, f"Online endpoint '{parent.name}'", "endpointName")
    endpoints.deployment_name(name)
    stored = deployments.validated(body, kubernetes.endpoint_spec(repo, ref.key, parent.body))
    stored["location"] = stored["location"] or parent.location
    found = resolve(repo, ref, stored)
    for field in ("model", "environment"):  # a registry's label means the version it names now, as in Azure
        stored["refs"][field]["version"] = getattr(found, field).version
    _check_runnable(settings, ref, stored, found)
    key = f"{parent.key}/deployments/{name}".lower()
    row = repo.online_deployment(key)
    if row is None:
        row = OnlineDeployment(key=key, endpoint_key=parent.key, name=name, body=stored,
                               provisioning_state="Creating", created_at=now, modified_at=now)
        repo.add(row)
        return row, operations.start(repo, key, "Create", now), True
    _not_deleting(row.provisioning_state, f"Deployment '{row.name}'", "deploymentName")
    if deployments.needs_new_instances(row.body, stored) or row.provisioning_state == "Failed":
        row.generation, row.image, row.error = row.generation + 1, None, None
        row.provisioning_state = "Updating"
    elif row.body["sku"]["capacity"] != stored["sku"]["capacity"]:
        row.provisioning_state = "Scaling"
    else:
        row.provisioning_state = "Updating"
    row.body, row.modified_at = stored, now
    return row, operations.start(repo, key, "Update", now), False


def delete_deployment(repo: Repository, ref: WorkspaceRef, endpoint: str, name: str,
                      now: datetime) -> tuple[OnlineDeployment, Operation] | None:
    parent = get_endpoint(repo, ref, endpoint)
    row = repo.online_deployment(f"{parent.key}/deployments/{name}")
    if row is None:
        return None
    for field in ("traffic", "mirrorTraffic"):
        share = parent.body[P][field].get(row.name)
        if share:
            raise Conflict(f"Deployment '{row.name}' takes {share} percent of endpoint '{parent.name}''s "
                           f"{'mirror ' if field == 'mirrorTraffic' else ''}traffic; set it to 0 with an endpoint "
                           "update before deleting the deployment.", target=f"{P}.{field}.{row.name}")
    row.provisioning_state, row.modified_at = "Deleting", now
    return row, operations.start(repo, row.key, "Delete", now)


def logs_dir(settings: Settings, endpoint: str, deployment: str) -> Path:
    return settings.data_dir / LOGS_DIR / endpoint.lower() / deployment.lower()


def logs(settings: Settings, row: OnlineDeployment, endpoint: OnlineEndpoint, body: object) -> dict:
    """POST getLogs {"tail": N, "containerType": "InferenceServer"|"StorageInitializer"}: the newest instance's
    inference-server log, or what was prepared for the deployment (image, model, code)."""
    body = payload.obj(body, "body")
    tail = body.get("tail", 5000)
    if isinstance(tail, bool) or not isinstance(tail, int) or tail < 0:
        raise ValidationFailed(f"tail must be a non-negative integer, got {tail!r}.", target="tail")
    kind = body.get("containerType") or "InferenceServer"
    if kind not in ("InferenceServer", "StorageInitializer"):
        raise ValidationFailed(f"containerType must be InferenceServer or StorageInitializer, got {kind!r}.",
                               target="containerType")
    folder = logs_dir(settings, endpoint.name, row.name)
    if kind == "StorageInitializer":
        files = [folder / "storage-initializer.log"]
    else:
        servers = [f for f in folder.glob("*.log") if f.name != "storage-initializer.log"] if folder.exists() else []
        files = sorted(servers, key=lambda f: f.stat().st_mtime)[-1:]
    # the model server writes this folder: a log it swapped for a link is not followed
    text = (confined.read_small(files[0], LOG_READ_LIMIT) or b"").decode(errors="replace") if files else ""
    lines = text.splitlines()
    return {"content": "\n".join(lines[-tail:] if tail else []) + ("\n" if lines and tail else "")}
