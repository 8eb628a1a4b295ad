"""Workspace use cases: the default workspace, create, read, delete."""

from datetime import datetime

from emulator.domain import managed_network, names, payload
from emulator.domain.ids import WorkspaceRef
from emulator.domain.storage import blob_access
from emulator.errors import Conflict, NotFound, ValidationFailed
from emulator.settings import Settings
from emulator.store.repositories import Repository
from emulator.store.tables import Workspace

_WRITABLE = ("friendlyName", "description", "hbiWorkspace", "publicNetworkAccess", "v1LegacyMode",
             "storageAccount", "keyVault", "applicationInsights", "containerRegistry", "imageBuildCompute",
             "managedNetwork", "systemDatastoresAuthMode", "enableDataIsolation")


def default_ref(settings: Settings) -> WorkspaceRef:
    return WorkspaceRef(settings.subscription_id, settings.resource_group, settings.workspace)


def ensure_default(repo: Repository, settings: Settings, now: datetime) -> None:
    ref = default_ref(settings)
    if repo.workspace(ref.key) is None:
        put(repo, ref, {"location": settings.location, "properties": {"friendlyName": ref.name}}, now)


def get(repo: Repository, ref: WorkspaceRef) -> Workspace:
    row = repo.workspace(ref.key)
    if row is None:
        raise NotFound(f"Workspace '{ref.name}' was not found in resource group '{ref.resource_group}'.",
                       target="workspaceName")
    return row


def _validated(body: object) -> dict:
    body = payload.obj(body, "body", required=True)
    payload.finite(body)
    props = payload.obj(body.get("properties"), "properties")
    kept = {k: props[k] for k in _WRITABLE if props.get(k) is not None}
    for key in ("friendlyName", "description"):
        payload.string(kept.get(key), f"properties.{key}")
    if "managedNetwork" in kept:
        kept["managedNetwork"] = managed_network.parse(kept["managedNetwork"])
    return {"location": payload.location(body.get("location")), "tags": payload.tags(body.get("tags")),
            "properties": kept, "identity": payload.obj(body.get("identity"), "identity") or None,
            "kind": payload.string(body.get("kind"), "kind") or "Default"}


def _check_account_free(repo: Repository, ref: WorkspaceRef) -> None:
    """Each workspace has a storage account of its own; a new one whose derived name (a hash of its ARM id)
    meets another's is refused rather than share it."""
    account = blob_access.workspace_account(ref)
    taken = next((w for w in repo.all_workspaces() if blob_access.workspace_account(WorkspaceRef.of(w)) == account), None)
    if taken is not None:
        raise Conflict(f"Workspace '{ref.name}' would share storage account '{account}' with workspace "
                       f"'{taken.name}' of resource group '{taken.resource_group}'; choose another name.",
                       target="workspaceName")


def put(repo: Repository, ref: WorkspaceRef, body: object, now: datetime) -> tuple[Workspace, bool]:
    names.subscription(ref.subscription)
    names.resource_group(ref.resource_group)
    names.workspace_name(ref.name)
    spec = _validated(body)
    row = repo.workspace(ref.key)
    if row is None:
        _check_account_free(repo, ref)
        row = Workspace(key=ref.key, subscription=ref.subscription, resource_group=ref.resource_group,
                        name=ref.name, location=spec["location"], body=spec, created_at=now, modified_at=now)
        repo.add(row)
        return row, True
    row.body, row.modified_at = {**spec, "location": row.location}, now
    return row, False


def delete(repo: Repository, ref: WorkspaceRef, now: datetime) -> bool:
    """Remove the workspace; its computes are marked Deleting for the controller to clean up."""
    row = repo.workspace(ref.key)
    if row is None:
        return False
    for compute in repo.computes(ref.key):
        compute.provisioning_state, compute.modified_at = "Deleting", now
    repo.remove(row)
    return True


def from_template(repo: Repository, subscription: str, resource_group: str, body: object,
                  now: datetime) -> Workspace:
    """Create a workspace from the ARM template deployment the SDK's `workspaces.begin_create` sends."""
    template = body.get("properties") if isinstance(body, dict) else None
    params = template.get("parameters") if isinstance(template, dict) else None
    if not isinstance(params, dict) or "workspaceName" not in params:
        raise ValidationFailed("amlemu deploys Azure ML workspace templates only: "
                               "properties.parameters.workspaceName is required.",
                               target="properties.parameters.workspaceName")

    def value(name: str):
        entry = params.get(name)
        return entry.get("value") if isinstance(entry, dict) else None

    name = value("workspaceName")
    if not isinstance(name, str):
        raise ValidationFailed("properties.parameters.workspaceName.value must be a string.",
                               target="properties.parameters.workspaceName")
    properties = {k: value(k) for k in ("friendlyName", "description") if isinstance(value(k), str)}
    if value("managedNetwork") is not None:  # the SDK sends one always: Disabled unless the user chose
        properties["managedNetwork"] = value("managedNetwork")
    row, _created = put(repo, WorkspaceRef(subscription, resource_group, name),
                        {"location": value("location"), "tags": value("tagValues") or {},
                         "kind": value("kind") or "Default", "identity": value("identity"),
                         "properties": properties}, now)
    return row


def patch(repo: Repository, ref: WorkspaceRef, body: object, now: datetime) -> Workspace:
    """PATCH: tags and the writable properties given replace the stored ones."""
    row = get(repo, ref)
    body = payload.obj(body, "body", required=True)
    props = payload.obj(body.get("properties"), "properties")
    current = row.body
    merged = {**current, "location": row.location,
              "tags": body["tags"] if "tags" in body else current.get("tags", {}),
              "properties": {**current.get("properties", {}), **props}}
    updated, _ = put(repo, ref, merged, now)
    return updated
