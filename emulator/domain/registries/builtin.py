"""The built-in `azureml` registry: Azure ML's curated environments (domain/assets/curated.py) as the registry shows
them, read-only. Pure.

A family's versions are the catalogue's (`latest` is the newest); a version's body is the environment the
workspace's `AzureML-<name>` holds for it, so a job naming azureml://registries/azureml/environments/<name>/versions/<v>
runs what `environments.get` showed.
"""

from dataclasses import dataclass
from datetime import UTC, datetime

from emulator.domain.assets import curated, versioned
from emulator.domain.registries.ids import RegistryRef
from emulator.errors import Forbidden, NotFound

NAME = curated.REGISTRY
ENVIRONMENTS = "environments"
PUBLISHED = datetime(2024, 10, 1, tzinfo=UTC)  # the versions' createdAt: the catalogue keeps no dates of its own


@dataclass(frozen=True)
class Asset:
    """One version of a registry asset; body as a workspace stores it (domain/assets/versioned.py)."""
    kind: str
    name: str
    version: str
    body: dict
    created_at: datetime


def _versions(family: curated.Curated) -> list[Asset]:
    body = versioned.environment_version(curated.environment_body(family))
    return [Asset(ENVIRONMENTS, family.name, v, body, PUBLISHED) for v in curated.VERSIONS]


def containers(kind: str, view: str) -> list[list[Asset]]:
    """Each asset of the kind with its versions, oldest first, in the listViewType `view` (none is archived)."""
    if kind != ENVIRONMENTS or view == "ArchivedOnly":
        return []
    return [_versions(family) for _, family in sorted(curated.CATALOGUE.items())]


def container(kind: str, name: str) -> list[Asset]:
    if kind != ENVIRONMENTS:
        raise NotFound(f"Registry '{NAME}' has no {kind} '{name}': amlemu serves only its curated environments "
                       "offline.", target="name")
    family = curated.family(name)
    if family is None:
        raise NotFound(f"Registry '{NAME}' has no environment '{name}'. Its curated environments: "
                       f"{', '.join(sorted(curated.CATALOGUE))}.", target="name")
    return _versions(family)


def version(kind: str, name: str, wanted: str) -> Asset:
    assets = container(kind, name)
    found = next((a for a in assets if a.version == wanted), None)
    if found is None:
        raise NotFound(f"Registry '{NAME}' has no version '{wanted}' of '{assets[0].name}' ({kind}). Its versions: "
                       f"{', '.join(a.version for a in assets)} (label 'latest': {assets[-1].version}).",
                       target="version")
    return found


def refused(ref: RegistryRef, kind: str, action: str) -> Forbidden:
    """Writing to Azure ML's own registry: ARM's authorization failure, saying where the asset can go instead."""
    return Forbidden(f"The client 'amlemu-user@amlemu.local' does not have authorization to perform action "
                     f"'Microsoft.MachineLearningServices/registries/{kind}/{action}' over scope '{ref.arm_id}'. "
                     f"The '{NAME}' registry is Azure ML's own and read-only: register the asset in a workspace "
                     "instead.", target="registryName", code="AuthorizationFailed")
