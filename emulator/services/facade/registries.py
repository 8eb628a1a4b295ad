"""Registries as the api calls them: discovery, then each asset kind's containers and versions."""

from typing import NoReturn

from emulator.domain.assets import versioned as rules
from emulator.domain.registries import builtin
from emulator.domain.registries.builtin import Asset
from emulator.domain.registries.ids import RegistryRef
from emulator.services import assets, registries
from emulator.services.facade.base import Service


class Registries(Service):
    def discovery(self, name: str) -> dict:
        return registries.discovery(self.settings, name)

    def containers(self, ref: RegistryRef, kind: str, view: str) -> tuple[list[list[Asset]], RegistryRef]:
        """Each asset's versions, oldest first; with the registry as found (its own spelling)."""
        ref = registries.scoped(self.settings, ref)
        return builtin.containers(kind, view), ref

    def container(self, ref: RegistryRef, kind: str, name: str) -> tuple[list[Asset], RegistryRef]:
        ref = registries.scoped(self.settings, ref)
        return builtin.container(kind, name), ref

    def versions(self, ref: RegistryRef, kind: str, name: str,
                 query: rules.ListQuery) -> tuple[list[Asset], RegistryRef]:
        ref = registries.scoped(self.settings, ref)
        return assets.select(builtin.container(kind, name), query), ref

    def version(self, ref: RegistryRef, kind: str, name: str, version: str) -> tuple[Asset, RegistryRef]:
        ref = registries.scoped(self.settings, ref)
        return builtin.version(kind, name, version), ref

    def write(self, ref: RegistryRef, kind: str, action: str) -> NoReturn:
        """Any write (a version or container PUT, an upload's data reference, an import): the built-in registry
        refuses them all."""
        raise builtin.refused(registries.scoped(self.settings, ref), kind, action)
