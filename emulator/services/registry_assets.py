"""A user's registry holds asset versions as a workspace does (services/assets, the same rows keyed under the
registry); what differs is where their files are (the registry's own storage: domain/registries/storage.py), how
they arrive (a container from tempdatarefs, or a workspace asset shared with `import`), and who reads them (jobs
and deployments of any workspace, by azureml://registries/... ids)."""

import uuid
from datetime import datetime
from pathlib import Path

from emulator import confined
from emulator.domain.assets import data as data_rules
from emulator.domain.assets import versioned
from emulator.domain.ids import WorkspaceRef
from emulator.domain.jobs import artifacts
from emulator.domain.registries import ids, storage
from emulator.domain.registries.ids import RegistryRef
from emulator.domain.storage import blob_access, datastores
from emulator.errors import Conflict, NotFound, ValidationFailed
from emulator.services import assets, registries
from emulator.settings import Settings
from emulator.store.repositories import Repository
from emulator.store.tables import AssetVersion

_SOURCE = "properties.sourceAssetId"


def _files(ref: RegistryRef, spec: dict, kind: str, data_dir: Path | None) -> dict:
    """A version's files must be in the registry's storage, and there already when the api has them at hand."""
    field = storage.URI_FIELDS[kind]
    target = f"properties.{field}"
    where = storage.location(ref, spec[field], target)
    if data_dir is None:
        return spec
    path = data_dir / artifacts.blob_dir(where)
    why = (data_rules.missing_files(spec["dataType"], spec[field], path.is_file(), path.is_dir(),
                                    (path / data_rules.MLTABLE_FILE).is_file())
           if kind == assets.DATA else None if path.exists() else f"no files at {spec[field]}")
    if why:
        raise ValidationFailed(f"{target}: {why}. Upload them to the container tempdatarefs hands out first.",
                               target=target)
    return spec


def resolve(repo: Repository, ref: RegistryRef, spec: dict, data_dir: Path | None, kind: str) -> dict:
    if kind == assets.ENVIRONMENTS:
        if spec.get("build"):
            storage.location(ref, spec["build"]["contextUri"], "properties.build.contextUri")
        return spec
    return _files(ref, spec, kind, data_dir)


def put(repo: Repository, ref: RegistryRef, kind: str, name: str, version: str, body: object, now: datetime,
        data_dir: Path | None) -> tuple[AssetVersion, bool]:
    return assets.put(repo, ref, kind, name, version, body, now, data_dir,
                      resolve=lambda r, owner, spec, d: resolve(r, owner, spec, d, kind))


def temporary_reference(settings: Settings, secret: bytes, ref: RegistryRef, name: str, version: str,
                        body: object, now: datetime) -> dict:
    """tempdatarefs: a fresh container of the registry's storage to upload a version's files to."""
    versioned.name(name)
    versioned.version(version)
    reference = assets.blob_reference(settings, secret, ref, blob_access.registry_account(ref), str(uuid.uuid4()), now,
                                      host_style=True)
    return {"blobReferenceForConsumption": reference, "temporaryDataReferenceId": f"{name}:{version}",
            "temporaryDataReferenceType": "TemporaryBlobReference"}


def read_reference(settings: Settings, secret: bytes, repo: Repository, ref: RegistryRef, kind: str, name: str,
                   version: str, now: datetime) -> dict:
    """datarefs: a read SAS on the container holding a version's files (what a download asks for)."""
    row = assets.get(repo, ref, kind, name, version)
    where = storage.location(ref, row.body.get(storage.URI_FIELDS.get(kind, "")), "blobUri")
    reference = assets.blob_reference(settings, secret, ref, where.account, where.container, now, host_style=True)
    return {"blobReferenceForConsumption": {**reference, "blobUri": row.body[storage.URI_FIELDS[kind]]}}


def find(repo: Repository, named: ids.AssetRef, target: str) -> AssetVersion:
    """The version a job or a deployment names in a user's registry (a label: the newest active version)."""
    try:
        row = repo.registry_named(ids.name(named.registry))
        if row is None:
            raise NotFound(f"Registry '{named.registry}' was not found.", target="registryName")
        ref = registries.ref_of(row)
        if named.version is not None:
            return assets.get(repo, ref, named.kind, named.name, named.version)
        return assets.latest(repo, ref, named.kind, named.name)
    except (NotFound, ValidationFailed) as exc:
        raise ValidationFailed(f"{target}: {exc.message}", target=target) from exc


def _source(repo: Repository, body: dict) -> tuple[WorkspaceRef, AssetVersion, str]:
    """The workspace asset an import names, which must exist."""
    named = ids.source_asset(body.get("sourceAssetId"), _SOURCE)
    workspace = next((w for w in repo.all_workspaces() if datastores.workspace_guid(w.key) == named.workspace_guid),
                     None)
    if workspace is None:
        raise ValidationFailed(f"{_SOURCE}: no workspace has the id '{named.workspace_guid}'.", target=_SOURCE)
    ref = WorkspaceRef.of(workspace)
    try:
        return ref, assets.get(repo, ref, named.kind, named.name, named.version), named.kind
    except NotFound as exc:
        raise ValidationFailed(f"{_SOURCE}: {exc.message}", target=_SOURCE) from exc


def _copy_files(settings: Settings, source: WorkspaceRef, row: AssetVersion, kind: str, ref: RegistryRef) -> str:
    """The workspace version's files copied into a new container of the registry (no link followed), as Azure
    copies them: the registry's version outlives the workspace. Their new URL."""
    field = storage.URI_FIELDS[kind]
    where = datastores.resolve_uri(source, row.body[field], f"properties.{field}")
    rel = artifacts.blob_dir(where)
    src = settings.data_dir / rel
    if not src.exists():
        raise ValidationFailed(f"{_SOURCE}: {versioned.unprefixed(row.name)} version {row.version} has no files at "
                               f"{row.body[field]}.", target=_SOURCE)
    target = datastores.BlobLocation(blob_access.registry_account(ref), str(uuid.uuid4()), "")
    folder = settings.data_dir / artifacts.blob_dir(target)
    name = Path(rel).name if where.blob else "files"
    if src.is_dir():
        confined.copy_tree(settings.data_dir, rel, folder / name)
    else:
        confined.copy_file(settings.data_dir, rel, folder)
    return storage.url(settings.public_netloc, target._replace(blob=name), folder=src.is_dir())


def import_asset(repo: Repository, settings: Settings, ref: RegistryRef, body: object,
                 now: datetime) -> AssetVersion:
    """A workspace's model, environment or data version copied into the registry under the destination name and
    version (the SDK's share()); an existing destination version is refused."""
    props = ids.import_properties(body)
    source, row, kind = _source(repo, props)
    name = props.get("destinationName") or versioned.unprefixed(row.name)
    version = props.get("destinationVersion") or row.version
    versioned.name(name, "properties.destinationName")
    if repo.asset_version(ref.child_id(kind, name) + f"/versions/{version}") is not None:
        raise Conflict(f"Registry '{ref.name}' already has {kind} '{name}' version '{version}'; share it under "
                       "another version.", target="properties.destinationVersion")
    spec = {k: v for k, v in row.body.items() if k not in ("jobName", "isAnonymous")}
    if kind == assets.ENVIRONMENTS and spec.get("build"):
        raise ValidationFailed(f"{_SOURCE}: environments built from a Docker build context cannot be shared by "
                               "amlemu yet; share an image environment.", target=_SOURCE)
    if kind in storage.URI_FIELDS:
        spec[storage.URI_FIELDS[kind]] = _copy_files(settings, source, row, kind, ref)
    return put(repo, ref, kind, name, version, {"properties": spec}, now, settings.data_dir)[0]
