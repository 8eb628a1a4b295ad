"""A job output with `name` (and `version`) is registered as an asset when the job completes, as Azure does: a
data asset for uri_file, uri_folder and mltable outputs, a model for custom_model and mlflow_model ones, pointing
at where the output was written."""

from datetime import datetime
from pathlib import Path

from emulator.domain.assets import versioned
from emulator.domain.ids import WorkspaceRef
from emulator.domain.jobs import artifacts, command_job
from emulator.errors import EmulatorError, ValidationFailed
from emulator.services import assets
from emulator.store.repositories import Repository
from emulator.store.tables import Job

MODEL_OUTPUTS = ("custom_model", "mlflow_model", "triton_model")


def _kind(entry: dict) -> str:
    return assets.MODELS if entry["jobOutputType"] in MODEL_OUTPUTS else assets.DATA


def check(repo: Repository, ref: WorkspaceRef, outputs: dict[str, dict]) -> None:
    """At submit: a name the asset may have, and no version of it there already (it would be refused later)."""
    for name, entry in outputs.items():
        asset, version = entry.get("assetName"), entry.get("assetVersion")
        if asset is None:
            continue
        target = f"{command_job.P}.outputs.{name}"
        versioned.name(asset, f"{target}.assetName")
        if version is not None:
            versioned.version(str(version))
            if repo.asset_version((ref.child_id(_kind(entry), asset) + f"/versions/{version}").lower()):
                raise ValidationFailed(f"{target}.assetVersion: {_kind(entry)} '{asset}' already has a version "
                                       f"'{version}'; give another version, or none for the next one.",
                                       target=f"{target}.assetVersion")


def register(repo: Repository, ref: WorkspaceRef, job: Job, now: datetime, data_dir: Path) -> list[str]:
    """Register the job's named outputs; what could not be registered, said in words (the job stays done)."""
    problems = []
    for name, entry in job.body.get("outputs", {}).items():
        asset = entry.get("assetName")
        if asset is None:
            continue
        kind, uri = _kind(entry), artifacts.output_uri(job.name, name, entry)
        version = str(entry.get("assetVersion") or versioned.next_version(
            [r.version for r in assets.versions(repo, ref, kind, asset)]))
        body = ({"modelUri": uri, "modelType": entry["jobOutputType"], "jobName": job.name} if kind == assets.MODELS
                else {"dataType": entry["jobOutputType"], "dataUri": uri})
        try:
            with repo.session.begin_nested():
                assets.put(repo, ref, kind, asset, version, {"properties": body}, now, data_dir)
        except EmulatorError as exc:  # a version made meanwhile, say: the job's work is done all the same
            problems.append(f"output {name} was not registered as {kind} {asset}:{version}: {exc.message}")
    return problems
