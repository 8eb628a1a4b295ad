"""Registries: the built-in `azureml` (Azure ML's curated environments, read-only) and the user's own, rows of the
store. Registry names are global: discovery finds one by name alone, then its data plane is read under the
subscription and resource group it gave; ARM creates, reads, lists and deletes the user's own."""

from datetime import datetime

from emulator import tokens
from emulator.domain import names
from emulator.domain.registries import builtin, ids, resource
from emulator.domain.registries.ids import RegistryRef
from emulator.errors import Conflict, NotFound, ValidationFailed
from emulator.settings import Settings
from emulator.store.repositories import Repository
from emulator.store.tables import Registry

# Where the built-in registry says it lives: the emulator's own subscription, a resource group no workspace uses.
BUILTIN_RESOURCE_GROUP = "registry-builtin-azureml"


def ref_of(row: Registry) -> RegistryRef:
    return RegistryRef(row.subscription, row.resource_group, row.name)


def builtin_ref(settings: Settings) -> RegistryRef:
    return RegistryRef(settings.subscription_id, BUILTIN_RESOURCE_GROUP, builtin.NAME)


def is_builtin(ref: RegistryRef) -> bool:
    return ref.name.lower() == builtin.NAME


def find(repo: Repository, settings: Settings, name: str) -> RegistryRef:
    """The registry a name stands for, with the subscription and resource group it lives in."""
    if ids.name(name).lower() == builtin.NAME:
        return builtin_ref(settings)
    row = repo.registry_named(name)
    if row is None:
        mine = ", ".join(r.name for r in repo.registries(settings.subscription_id)) or "none of your own"
        raise NotFound(f"Registry '{name}' was not found. The registries here: {builtin.NAME} (Azure ML's curated "
                       f"environments), and in subscription '{settings.subscription_id}': {mine}.",
                       target="registryName")
    return ref_of(row)


def scoped(repo: Repository, settings: Settings, asked: RegistryRef) -> RegistryRef:
    """The registry a data-plane path names, which must be under the subscription and resource group its
    discovery document gave (ARM paths match without case)."""
    found = find(repo, settings, asked.name)
    if found.key != asked.key:
        raise NotFound(f"Registry '{asked.name}' was not found in resource group '{asked.resource_group}' of "
                       f"subscription '{asked.subscription}': it is in '{found.resource_group}' of "
                       f"'{found.subscription}', as its discovery document says.", target="registryName")
    return found


def discovery(repo: Repository, settings: Settings, name: str) -> dict:
    ref = find(repo, settings, name)
    row = repo.registry(ref.key)
    regions = [r["location"] for r in row.body["regions"]] if row is not None else [settings.location]
    return ids.discovery(ref, regions, f"{settings.public_url}/", tokens.TENANT_ID)


def get(repo: Repository, ref: RegistryRef) -> Registry:
    row = repo.registry(ref.key)
    if row is None:
        raise NotFound(f"Registry '{ref.name}' was not found in resource group '{ref.resource_group}'.",
                       target="registryName")
    return row


def put(repo: Repository, ref: RegistryRef, body: object, now: datetime) -> tuple[Registry, bool]:
    """Create, or update tags, regions and settings; the name is global and `azureml` is Azure ML's own."""
    names.subscription(ref.subscription)
    names.resource_group(ref.resource_group)
    ids.name(ref.name)
    spec = resource.validated(body)
    if is_builtin(ref):
        raise Conflict(f"The registry name '{ref.name}' is taken: it is Azure ML's own registry of curated "
                       "environments. Choose another name.", target="registryName")
    row = repo.registry(ref.key)
    if row is None:
        taken = repo.registry_named(ref.name)
        if taken is not None:
            raise Conflict(f"The registry name '{ref.name}' is taken by a registry in resource group "
                           f"'{taken.resource_group}': registry names are global. Choose another name.",
                           target="registryName")
        row = Registry(key=ref.key, subscription=ref.subscription, resource_group=ref.resource_group, name=ref.name,
                       location=spec["location"], body=spec, created_at=now, modified_at=now)
        repo.add(row)
        return row, True
    if field := resource.changed_fixed(row.body, spec):
        raise ValidationFailed(f"Registry '{row.name}' is in '{row.body[field]}'; its {field} cannot change.",
                               target=field)
    row.body, row.modified_at = spec, now
    return row, False


def listed(repo: Repository, subscription: str, resource_group: str | None = None) -> list[Registry]:
    return repo.registries(subscription, resource_group)


def delete(repo: Repository, ref: RegistryRef) -> Registry | None:
    """The registry and its asset versions (its files go with its storage account, after the commit); None when
    there was no such registry."""
    row = repo.registry(ref.key)
    if row is None:
        return None
    for asset in repo.all_asset_versions(row.key):
        repo.remove(asset)
    repo.remove(row)
    return row


def unknown_operation(operation_id: str) -> NotFound:
    return NotFound(f"Operation '{operation_id}' was not found.", target="operationId")
