"""A workspace's datastores and the azureml:// paths that point into them. Pure.

Every workspace has Azure's two default datastores, blob containers on the workspace's storage account:
workspaceblobstore (the default: the SDK uploads local job inputs there and downloads outputs from it) and
workspaceartifactstore. amlemu serves these two only; attaching other datastores is not emulated.
"""

import re
import uuid
from dataclasses import dataclass
from datetime import timedelta
from typing import NamedTuple

from emulator.domain import payload
from emulator.domain.ids import WorkspaceRef
from emulator.domain.storage import blob_access
from emulator.errors import NotFound, ValidationFailed

BLOB_STORE = "workspaceblobstore"
ARTIFACT_STORE = "workspaceartifactstore"
ARTIFACT_CONTAINER = "azureml"
# An expiry far enough out for any use, and still a date the SAS can carry.
MAX_SECRET_HOURS = 24 * 365
SHORT_FORM = "azureml://datastores/<name>/paths/<path>"
LONG_FORM = "azureml://subscriptions/<id>/resourcegroups/<group>/workspaces/<name>/datastores/<name>/paths/<path>"
# The SDK's own patterns (constants/_common.py), with an empty path allowed: the whole datastore.
_SHORT = re.compile(r"^azureml://datastores/([^/]+)/paths/(.*)$", re.IGNORECASE | re.DOTALL)
_LONG = re.compile(r"^azureml://subscriptions/([^/]+)/resourcegroups/([^/]+)/workspaces/([^/]+)"
                   r"/datastores/([^/]+)/paths/(.*)$", re.IGNORECASE | re.DOTALL)


@dataclass(frozen=True)
class Datastore:
    name: str
    account: str
    container: str
    is_default: bool


class BlobLocation(NamedTuple):
    account: str
    container: str
    blob: str  # a blob name or a folder prefix, without leading or trailing '/'; "" is the whole container


def workspace_guid(workspace_key: str) -> str:
    """The workspace's GUID (ARM's properties.workspaceId), stable for its case-insensitive ARM id."""
    return str(uuid.uuid5(uuid.NAMESPACE_URL, workspace_key.lower()))


def defaults(ref: WorkspaceRef) -> list[Datastore]:
    """The datastores Azure creates with every workspace, in name order."""
    account = blob_access.workspace_account(ref)
    return [Datastore(ARTIFACT_STORE, account, ARTIFACT_CONTAINER, is_default=False),
            Datastore(BLOB_STORE, account, f"azureml-blobstore-{workspace_guid(ref.key)}", is_default=True)]


def listed(ref: WorkspaceRef, is_default: bool | None = None) -> list[Datastore]:
    return [d for d in defaults(ref) if is_default is None or d.is_default == is_default]


def _find(ref: WorkspaceRef, name: str) -> Datastore | None:
    # ARM names match case-insensitively.
    return next((d for d in defaults(ref) if d.name == name.lower()), None)


def _unknown(ref: WorkspaceRef, name: str) -> str:
    return (f"Datastore '{name}' was not found in workspace '{ref.name}'; amlemu serves its default datastores "
            f"{BLOB_STORE} and {ARTIFACT_STORE}.")


def get(ref: WorkspaceRef, name: str) -> Datastore:
    store = _find(ref, name)
    if store is None:
        raise NotFound(_unknown(ref, name), target="name")
    return store


def secret_lifetime(body: object) -> timedelta:
    """How long the SAS listSecrets hands out lasts. The SDK always asks for an expirable secret, for
    expireAfterHours=1; otherwise Azure would return the account key, which amlemu does not have, so the
    usual SAS lifetime stands in for it."""
    body = payload.obj(body, "body")
    expirable, hours = body.get("expirableSecret"), body.get("expireAfterHours")
    if expirable is not None and not isinstance(expirable, bool):
        raise ValidationFailed("expirableSecret must be true or false.", target="expirableSecret")
    if hours is not None and (not isinstance(hours, int) or isinstance(hours, bool)
                              or not 1 <= hours <= MAX_SECRET_HOURS):
        raise ValidationFailed(f"expireAfterHours must be an integer from 1 to {MAX_SECRET_HOURS}.",
                               target="expireAfterHours")
    return timedelta(hours=hours) if expirable and hours is not None else blob_access.SAS_LIFETIME


def _blob_path(path: str, target: str) -> str:
    trimmed = path.strip("/")
    if not trimmed:
        return ""
    try:
        return blob_access.blob_name(trimmed)
    except ValidationFailed as exc:
        raise ValidationFailed(f"{target}: {exc.message}", target=target) from exc


def locate(ref: WorkspaceRef, datastore: str, path: str, target: str) -> BlobLocation:
    """Where `path` of the workspace's datastore `datastore` lives in the blob store."""
    store = _find(ref, datastore)
    if store is None:
        raise ValidationFailed(f"{target}: {_unknown(ref, datastore)}", target=target)
    return BlobLocation(store.account, store.container, _blob_path(path, target))


def resolve_uri(ref: WorkspaceRef, uri: object, target: str) -> BlobLocation:
    """Where an azureml:// datastore URI of the workspace `ref` points: the short form, or the long form
    naming this same workspace (amlemu resolves a workspace's URIs against its own datastores only)."""
    if not isinstance(uri, str):
        raise ValidationFailed(f"{target} must be a string: an azureml datastore URI, {SHORT_FORM}.", target=target)
    short, long = _SHORT.fullmatch(uri), _LONG.fullmatch(uri)
    if short:
        return locate(ref, short[1], short[2], target)
    if long:
        named = WorkspaceRef(long[1], long[2], long[3])
        if named.key != ref.key:
            raise ValidationFailed(f"{target} names workspace '{named.name}' of resource group "
                                   f"'{named.resource_group}'; only datastores of workspace '{ref.name}' can be "
                                   "used here.", target=target)
        return locate(ref, long[4], long[5], target)
    raise ValidationFailed(f"{target} must be an azureml datastore URI, {SHORT_FORM} or {LONG_FORM}, "
                           f"got {uri[:200]!r}.", target=target)


def _blob_url(ref: WorkspaceRef, uri: str, target: str) -> BlobLocation | None:
    """Where a blob URL of this emulator points (path- or host-style, percent-decoded once as the blob API
    decodes it), checked to stay in a container of the workspace's own storage account."""
    where = blob_access.blob_location(uri)
    if where is None:
        return None
    account, container, blob = where
    own = blob_access.workspace_account(ref)
    if account != own:
        raise ValidationFailed(f"{target} points at storage account '{account[:64]}'; workspace '{ref.name}' "
                               f"keeps its files in its own account, '{own}'.", target=target)
    try:
        blob_access.container_name(container)
    except ValidationFailed as exc:
        raise ValidationFailed(f"{target}: {exc.message}", target=target) from exc
    return BlobLocation(account, container, _blob_path(blob, target))


def resolve_asset_uri(ref: WorkspaceRef, uri: object, target: str) -> BlobLocation:
    """Where a code snapshot or a build context is: a blob URL the emulator handed out (startPendingUpload,
    the datastores' account URL) or an azureml datastore URI, inside the workspace's own storage."""
    if isinstance(uri, str) and not uri.lower().startswith("azureml://"):
        where = _blob_url(ref, uri, target)
        if where is None:
            raise ValidationFailed(f"{target} must be a blob URL in the storage of workspace '{ref.name}' "
                                   f"(https://<account>.blob.<suffix>/<container>/<path>, as startPendingUpload "
                                   f"hands out) or a datastore URI, {SHORT_FORM}; got {uri[:200]!r}.", target=target)
        return where
    return resolve_uri(ref, uri, target)
