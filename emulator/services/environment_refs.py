"""The environment version a job or a component names: a workspace's (by its ARM id), a curated one (which becomes
the workspace's `AzureML-<name>` on first use), or one of a user's registry (azureml://registries/...)."""

from dataclasses import dataclass
from datetime import datetime

from emulator.domain.assets import curated
from emulator.domain.ids import WorkspaceRef
from emulator.domain.jobs import command_job
from emulator.domain.registries import ids as registry_ids
from emulator.errors import NotFound, ValidationFailed
from emulator.services import assets, registry_assets
from emulator.services import curated as curated_service
from emulator.store.repositories import Repository
from emulator.store.tables import AssetVersion


@dataclass(frozen=True)
class Found:
    row: AssetVersion
    curated_id: str | None = None  # the ARM id of the workspace's version a curated name stands for
    registry: bool = False  # a version of a user's registry, not the workspace's


def in_workspace(repo: Repository, ref: WorkspaceRef, environment_id: str, target: str, now: datetime) -> Found:
    """NotFound and malformed ids are a ValidationFailed naming `target`: the caller's body is at fault."""
    if reference := curated.parse(environment_id, target):
        arm_id = curated_service.environment_id(repo, ref, reference, now)
        return Found(repo.asset_version(arm_id), curated_id=arm_id)
    if registry_ids.is_asset_id(environment_id):
        named = registry_ids.asset_ref(environment_id, assets.ENVIRONMENTS, target)
        return Found(registry_assets.find(repo, named, target), registry=True)
    name, version = command_job.version_ref(environment_id, assets.ENVIRONMENTS, target)
    try:
        return Found(assets.get(repo, ref, assets.ENVIRONMENTS, name, version))
    except NotFound as exc:
        raise ValidationFailed(exc.message, target=target) from exc
