"""Model versions: a job's output resolved to where its files live, and where any model's files are on the
host (what a deployment mounts). Versions are stored, listed and read through services/assets as MODELS."""

from pathlib import Path

from emulator.domain.assets import models, versioned
from emulator.domain.ids import WorkspaceRef
from emulator.domain.jobs import artifacts
from emulator.domain.registries import ids as registry_ids
from emulator.domain.registries import storage as registry_storage
from emulator.domain.storage import datastores
from emulator.errors import NotFound, ValidationFailed
from emulator.store.repositories import Repository
from emulator.store.tables import AssetVersion


def resolve(repo: Repository, ref: WorkspaceRef, spec: dict) -> dict:
    """A checked model spec with modelUri pointing into the workspace's datastores: a job's output becomes the
    datastore URI it lives at, with jobName set; a datastore URI must name one of the workspace's datastores."""
    source = models.job_source(spec["modelUri"])
    if source is None:
        datastores.resolve_uri(ref, spec["modelUri"], models.TARGET)
        return spec
    uri, job = job_output_uri(repo, ref, source, models.TARGET)
    return {**spec, "modelUri": uri, "jobName": job}


def job_output_uri(repo: Repository, ref: WorkspaceRef, source: models.JobSource, target: str) -> tuple[str, str]:
    """The datastore URI of a job's output (a model's path, or a job's input) and the job's name as stored:
    the job must be there."""
    job = repo.job(ref.child_id("jobs", source.job))
    if job is None:
        raise ValidationFailed(f"{target} names job '{source.job}', which was not found in workspace "
                               f"'{ref.name}'.", target=target)
    return models.job_output_uri(ref, job.name, job.body.get("outputs") or {}, source, target), job.name


def in_stage(rows: list[AssetVersion], stage: str | None) -> list[AssetVersion]:
    """models.list(name, stage=...): the versions in that stage, compared without case; all without one."""
    if stage is None:
        return rows
    return [r for r in rows if r.body.get("stage", versioned.DEFAULT_STAGE).lower() == stage.lower()]


def relative_path(ref: WorkspaceRef, row: AssetVersion) -> str:
    """The model's file or folder relative to the data directory, as job mounts name their sources: in the
    workspace's datastores, or in its registry's storage when a deployment of `ref` uses a registry's model."""
    registry = registry_ids.owner_of(row.workspace_key)
    if registry is not None:
        return artifacts.blob_dir(registry_storage.location(registry, row.body["modelUri"], models.TARGET))
    return artifacts.blob_dir(datastores.resolve_uri(ref, row.body["modelUri"], models.TARGET))


def host_path(data_dir: Path, ref: WorkspaceRef, row: AssetVersion) -> Path:
    """The model's file or folder under `data_dir`: a model registered from a file is that one file, from a
    folder that folder. NotFound while nothing is there (a job that has not written it yet)."""
    path = data_dir / relative_path(ref, row)
    if not path.exists():
        raise NotFound(f"Model '{row.name}' version '{row.version}' has no files yet at {row.body['modelUri']}.",
                       target="modelUri")
    return path
