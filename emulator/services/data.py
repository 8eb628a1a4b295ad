"""Data assets: a version's files checked where its dataUri points, and a job's inputs resolved to the files
they read (a data asset's dataUri, or a datastore path that must be there). Versions are stored, listed and
read through services/assets as DATA."""

import os
from collections.abc import Mapping
from pathlib import Path

from emulator.domain.assets import data as rules
from emulator.domain.assets import models as model_rules
from emulator.domain.ids import WorkspaceRef
from emulator.domain.jobs import artifacts, command_job
from emulator.domain.storage import datastores, external
from emulator.errors import ValidationFailed
from emulator.services import models
from emulator.store.repositories import Repository
from emulator.store.tables import AssetVersion

KIND = "data"


def _host(data_dir: Path, where: datastores.BlobLocation) -> Path:
    return data_dir / artifacts.blob_dir(where)


def resolve(_repo: Repository, ref: WorkspaceRef, spec: dict, data_dir: Path | None) -> dict:
    """A data version's dataUri must point into the workspace's datastores, at files of its dataType (checked
    when the api has the files at hand: `data_dir`)."""
    where = datastores.resolve_uri(ref, spec["dataUri"], rules.TARGET)
    if data_dir is not None:
        path = _host(data_dir, where)
        why = rules.missing_files(spec["dataType"], spec["dataUri"], path.is_file(), path.is_dir(),
                                  (path / rules.MLTABLE_FILE).is_file())
        if why:
            raise ValidationFailed(f"{rules.TARGET}: {why}.", target=rules.TARGET)
    return spec


def _version(repo: Repository, ref: WorkspaceRef, named: rules.DataRef, target: str) -> AssetVersion:
    rows = repo.asset_versions(ref.key, KIND, named.name)
    if named.version is not None:
        row = next((r for r in rows if r.version == named.version), None)
        if row is None:
            known = ", ".join(r.version for r in rows) or "none"
            raise ValidationFailed(f"{target}: data asset '{named.name}' has no version '{named.version}' in "
                                   f"workspace '{ref.name}' (its versions: {known}).", target=target)
        return row
    active = [r for r in rows if not r.body.get("isArchived")]
    if not active:
        raise ValidationFailed(f"{target}: data asset '{named.name}' was not found in workspace '{ref.name}'"
                               + (" (all its versions are archived)." if rows else "."), target=target)
    return max(active, key=lambda r: (r.created_at, r.key))


def input_uris(repo: Repository, ref: WorkspaceRef, inputs: dict[str, dict],
               data_dir: Path | None, outside: Mapping[str, str | None] | None = None) -> dict[str, str]:
    """{input: the datastore URI it reads} for a job's inputs naming a data asset, another job's output or data
    outside the workspace (`outside`: their copies, made before the transaction by services/external_data; None
    for a Direct input). Every other non-literal input must be a datastore path of the workspace, there already
    when the api has the files (`data_dir`)."""
    resolved = {}
    for name, entry in inputs.items():
        if entry["jobInputType"] == "literal":
            continue
        target = f"{command_job.P}.inputs.{name}.uri"
        named = rules.input_reference(ref, entry["uri"], target)
        if named is not None:
            resolved[name] = _version(repo, ref, named, target).body["dataUri"]
            continue
        if (source := model_rules.job_output_source(entry["uri"])) is not None:
            # another job's output: read where it was written, whether or not that job has finished
            resolved[name] = models.job_output_uri(repo, ref, source, target)[0]
            continue
        if external.is_external(entry["uri"]):
            if outside is None or name not in outside:
                raise ValidationFailed(f"{target}: data outside the workspace is not read here.", target=target)
            if copy := outside[name]:
                resolved[name] = copy
            continue
        where = datastores.resolve_uri(ref, entry["uri"], target)
        # lexists: a link is the job's to refuse when it runs, not followed here
        if data_dir is not None and not os.path.lexists(_host(data_dir, where)):
            raise ValidationFailed(f"{target}: nothing is stored at {entry['uri']}. Upload the data first, or "
                                   "give a local path and the SDK uploads it.", target=target)
    return resolved
