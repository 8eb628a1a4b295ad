"""Code, environment, model, data and component versions: store, read, list, dedupe by content hash, archive, and
start blob uploads. The owner is a workspace or a registry (`Owner`): the same rows, keyed under it; what a version's URIs
may point at differs (a workspace's datastores, a registry's own storage: services/registry_assets)."""

import uuid
from collections.abc import Callable
from datetime import datetime
from pathlib import Path

from emulator.domain import payload
from emulator.domain.assets import components, versioned
from emulator.domain.ids import WorkspaceRef
from emulator.domain.registries.ids import RegistryRef
from emulator.domain.storage import blob_access, datastores
from emulator.errors import Conflict, NotFound, ValidationFailed
from emulator.services import data, models
from emulator.services.blobs import BlobStore
from emulator.settings import Settings
from emulator.store.repositories import Repository
from emulator.store.tables import AssetVersion, Workspace

CODES, ENVIRONMENTS, MODELS, DATA, COMPONENTS = "codes", "environments", "models", data.KIND, "components"
_VALIDATORS = {CODES: versioned.code_version, ENVIRONMENTS: versioned.environment_version,
               MODELS: versioned.model_version, DATA: versioned.data_version}
_SPEC = {CODES: versioned.CODE_SPEC, ENVIRONMENTS: versioned.ENVIRONMENT_SPEC, MODELS: versioned.MODEL_SPEC,
         DATA: versioned.DATA_SPEC}
_LABEL = {CODES: "Code", ENVIRONMENTS: "Environment", MODELS: "Model", DATA: "Data", COMPONENTS: "Component"}
Owner = WorkspaceRef | RegistryRef
Resolver = Callable[[Repository, Owner, dict, Path | None], dict]


def _code(_repo: Repository, ref: WorkspaceRef, spec: dict, _data_dir: Path | None) -> dict:
    datastores.resolve_asset_uri(ref, spec["codeUri"], "properties.codeUri")
    return spec


def _environment(_repo: Repository, ref: WorkspaceRef, spec: dict, _data_dir: Path | None) -> dict:
    if spec.get("build"):
        datastores.resolve_asset_uri(ref, spec["build"]["contextUri"], "properties.build.contextUri")
    return spec


def _model(repo: Repository, ref: WorkspaceRef, spec: dict, _data_dir: Path | None) -> dict:
    return models.resolve(repo, ref, spec)


# Checks that need the workspace (its storage, a model's job output, a data version's files: those with the
# data directory at hand), after the pure ones.
_RESOLVERS = {CODES: _code, ENVIRONMENTS: _environment, MODELS: _model, DATA: data.resolve}
PENDING_UPLOAD_TYPES = ("None", "TemporaryBlobReference")
_ARCHIVED = {"ActiveOnly": (False,), "ArchivedOnly": (True,), "All": (False, True)}  # by listViewType


def get(repo: Repository, ref: Owner, kind: str, name: str, version: str) -> AssetVersion:
    name = versioned.unprefixed(name)
    if kind == COMPONENTS and version.lower() == components.DEFAULT_VERSION:
        return latest(repo, ref, kind, name)
    row = repo.asset_version(ref.child_id(kind, name) + f"/versions/{version}")
    if row is None:
        raise NotFound(f"{_LABEL[kind]} '{name}' version '{version}' was not found in {ref.noun} '{ref.name}'.",
                       target="version")
    return row


def latest(repo: Repository, ref: Owner, kind: str, name: str) -> AssetVersion:
    """What the label 'latest' means: the newest version not archived."""
    active = [r for r in container(repo, ref, kind, name) if not r.body.get("isArchived")]
    if not active:
        raise NotFound(f"{_LABEL[kind]} '{name}' of {ref.noun} '{ref.name}' has no version that is not archived.",
                       target="name")
    return active[-1]


def versions(repo: Repository, ref: Owner, kind: str, name: str) -> list[AssetVersion]:
    return repo.asset_versions(ref.key, kind, versioned.unprefixed(name))


def container(repo: Repository, ref: Owner, kind: str, name: str) -> list[AssetVersion]:
    """The versions of one named asset, oldest first; NotFound when there are none."""
    name = versioned.unprefixed(name)
    rows = repo.asset_versions(ref.key, kind, name)
    if not rows:
        raise NotFound(f"{_LABEL[kind]} '{name}' was not found in {ref.noun} '{ref.name}'.", target="name")
    return rows


def containers(repo: Repository, ref: Owner, kind: str, view: str) -> dict[str, list[AssetVersion]]:
    """Every named asset of a kind with its versions, oldest first, in the listViewType `view`."""
    grouped: dict[str, list[AssetVersion]] = {}
    for row in repo.asset_versions(ref.key, kind):
        grouped.setdefault(row.name.lower(), []).append(row)
    wanted = _ARCHIVED[view]
    return {key: rows for key, rows in grouped.items() if versioned.all_archived([r.body for r in rows]) in wanted
            and not (kind == COMPONENTS and components.hidden([r.body for r in rows]))}


def set_archived(repo: Repository, ref: Owner, kind: str, name: str, body: object,
                 now: datetime) -> list[AssetVersion]:
    """A container PUT, as the SDK's archive and restore of a whole asset send it: Azure archives (or restores)
    every version. amlemu keeps no container apart from its versions, so there must be some."""
    archived = versioned.container_archived(body)
    rows = container(repo, ref, kind, name)
    for row in rows:
        if bool(row.body.get("isArchived")) != archived:
            row.body, row.modified_at = {**row.body, "isArchived": archived}, now
    return rows


def select(rows: list[AssetVersion], query: versioned.ListQuery) -> list[AssetVersion]:
    """Apply a versions list query: archive view, creation order, $top."""
    chosen = [r for r in rows if bool(r.body.get("isArchived")) in _ARCHIVED[query.view]]
    if query.newest_first:
        chosen.reverse()
    return chosen[:query.top] if query.top is not None else chosen


def find_by_hash(repo: Repository, ref: WorkspaceRef, kind: str, content_hash: str,
                 hash_version: str | None) -> list[AssetVersion]:
    """Across every asset of the kind: the SDK names each anonymous upload afresh, so names cannot match."""
    return repo.assets_by_hash(ref.key, kind, content_hash, hash_version)


def _changed(kind: str, old: dict, new: dict) -> str | None:
    if kind == COMPONENTS:
        return components.changed(old, new)
    return next((key for key in _SPEC[kind] if old.get(key) != new.get(key)), None)


def _check_unchanged(row: AssetVersion, spec: dict, kind: str) -> None:
    if key := _changed(kind, row.body, spec):
        raise Conflict(f"{_LABEL[kind]} '{row.name}' version '{row.version}' already exists with a different "
                       f"{key}; asset versions are immutable, create a new version instead.",
                       target=f"properties.{key}")


def _validated(kind: str, name: str, version: str, body: object) -> dict:
    if kind == COMPONENTS:  # a spec names its own name and version, which must be the path's
        return components.version_body(body, name, version)
    return _VALIDATORS[kind](body)


def put(repo: Repository, ref: Owner, kind: str, name: str, version: str, body: object,
        now: datetime, data_dir: Path | None = None, resolve: Resolver | None = None) -> tuple[AssetVersion, bool]:
    """`resolve`: the owner's check of the version's URIs and references (a workspace's by default; components
    have no default: services/components passes the owner's)."""
    versioned.name(name)
    versioned.version(version)
    spec = _validated(kind, name, version, body)
    spec = (resolve or _RESOLVERS[kind])(repo, ref, spec, data_dir)
    key = (ref.child_id(kind, name) + f"/versions/{version}").lower()
    row = repo.asset_version(key)
    if row is not None:
        _check_unchanged(row, spec, kind)
        row.body, row.modified_at = {**row.body, **spec}, now
        return row, False
    existing = repo.asset_versions(ref.key, kind, name)
    stored_name = existing[0].name if existing else name
    hash_props = spec["properties"]
    row = AssetVersion(key=key, workspace_key=ref.key, kind=kind, name=stored_name, version=version, body=spec,
                       content_hash=hash_props.get("hash_sha256"), hash_version=hash_props.get("hash_version"),
                       created_at=now, modified_at=now)
    repo.add(row)
    return row, True


def start_pending_upload(settings: Settings, secret: bytes, ref: WorkspaceRef, workspace: Workspace, name: str,
                         version: str, body: object, now: datetime) -> dict:
    """A fresh container in the blob store and a SAS for it, as TemporaryBlobReference describes it."""
    versioned.name(name)
    versioned.version(version)
    body = payload.obj(body, "body")
    upload_type = body.get("pendingUploadType", "TemporaryBlobReference")
    if upload_type not in PENDING_UPLOAD_TYPES:
        raise ValidationFailed(f"pendingUploadType must be one of {', '.join(PENDING_UPLOAD_TYPES)}, "
                               f"got {upload_type!r}.", target="pendingUploadType")
    upload_id = payload.string(body.get("pendingUploadId"), "pendingUploadId") or str(uuid.uuid4())
    reference = blob_reference(settings, secret, ref, blob_access.workspace_account(ref), str(uuid.uuid4()), now)
    return {"blobReferenceForConsumption": reference, "pendingUploadId": upload_id, "pendingUploadType": upload_type}


def blob_reference(settings: Settings, secret: bytes, ref: Owner, account: str, container_name: str,
                   now: datetime, host_style: bool = False) -> dict:
    """A container of the owner's storage account (made if missing) and a SAS for it, as Azure's
    BlobReferenceForConsumption describes them: path-style, or host-style (https://<account>.blob.<suffix>/...,
    whose first path segment the SDK reads as the container when it downloads a registry's files)."""
    BlobStore(settings.data_dir).create_container(account, container_name)
    sas = blob_access.mint(secret, account, container_name, now)
    account_id = blob_access.account_id(ref.subscription, ref.resource_group, account)
    if host_style:
        blob_uri = f"https://{account}.blob.{settings.public_netloc}/{container_name}"
        return {"blobUri": blob_uri, "storageAccountArmId": account_id,
                "credential": {"credentialType": "SAS", "sasUri": f"{blob_uri}?{sas}"}}
    # A workspace's upload goes through sasUri (path-style: reachable without resolving <account>.blob names), and
    # the code version is named after blobUri, in the one form the SDK's code download parses.
    return {"blobUri": blob_access.azure_container_url(account, container_name), "storageAccountArmId": account_id,
            "credential": {"credentialType": "SAS",
                           "sasUri": f"{settings.public_url}/blob/{account}/{container_name}?{sas}"}}
