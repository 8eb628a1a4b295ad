"""Registries as the api serves them: found by name (discovery), then read under the scope discovery gave.

Only the built-in `azureml` registry exists for now (Azure ML's curated environments, read-only); registries of
the user's own will be rows of the store, found by the same name lookup."""

from emulator import tokens
from emulator.domain.registries import builtin, ids
from emulator.domain.registries.ids import RegistryRef
from emulator.errors import NotFound
from emulator.settings import Settings

# Where the built-in registry says it lives: the emulator's own subscription, a resource group no workspace uses.
BUILTIN_RESOURCE_GROUP = "registry-builtin-azureml"


def find(settings: Settings, name: str) -> RegistryRef:
    """The registry a name stands for, with the subscription and resource group it lives in."""
    if ids.name(name).lower() == builtin.NAME:
        return RegistryRef(settings.subscription_id, BUILTIN_RESOURCE_GROUP, builtin.NAME)
    raise NotFound(f"Registry '{name}' was not found. The registries here: {builtin.NAME} (Azure ML's curated "
                   "environments).", target="registryName")


def scoped(settings: Settings, asked: RegistryRef) -> RegistryRef:
    """The registry a data-plane path names, which must be under the subscription and resource group its
    discovery document gave (ARM paths match without case)."""
    found = find(settings, asked.name)
    if found.key != asked.key:
        raise NotFound(f"Registry '{asked.name}' was not found in resource group '{asked.resource_group}' of "
                       f"subscription '{asked.subscription}': it is in '{found.resource_group}' of "
                       f"'{found.subscription}', as its discovery document says.", target="registryName")
    return found


def discovery(settings: Settings, name: str) -> dict:
    return ids.discovery(find(settings, name), settings.location, f"{settings.public_url}/", tokens.TENANT_ID)
