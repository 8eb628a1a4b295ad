"""A curated environment a job names becomes an environment version of the workspace (`AzureML-<name>`), as Azure's
workspaces show the `azureml` registry's curated environments; its image is built when a job first needs it."""

from datetime import datetime

from emulator.domain.assets import curated, versioned
from emulator.domain.ids import WorkspaceRef
from emulator.services import assets
from emulator.store.repositories import Repository


def environment_id(repo: Repository, ref: WorkspaceRef, reference: curated.Reference, now: datetime) -> str:
    """The ARM id of the workspace's version of the curated environment, made on first use (later jobs only
    read it: no write for each submission)."""
    arm_id = f"{ref.arm_id}/environments/{reference.workspace_name}/versions/{reference.version}"
    if repo.asset_version(arm_id.lower()) is None:
        assets.put(repo, ref, assets.ENVIRONMENTS, reference.workspace_name, reference.version,
                   curated.environment_body(reference.curated), now)
    return arm_id


def offer(repo: Repository, ref: WorkspaceRef, kind: str, name: str, now: datetime) -> None:
    """A workspace shows the curated environments under `AzureML-<name>`: a read of one that no job used yet finds
    its latest version, made now."""
    family = curated.named(versioned.unprefixed(name)) if kind == assets.ENVIRONMENTS else None
    if family is not None and not assets.versions(repo, ref, kind, f"{curated.WORKSPACE_PREFIX}{family.name}"):
        environment_id(repo, ref, curated.Reference(family, curated.LATEST, registry=False), now)
