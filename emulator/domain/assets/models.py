"""Where a model version's files are: the URIs a model may be registered from. Pure.

The SDK sends a model's path as it was given, after uploading a local one: a datastore URI
(azureml://subscriptions/.../datastores/<name>/paths/<path>, or the short form), or a job's output,
which only the server can place:
- azureml://jobs/<job>/outputs/artifacts/paths/<path>: a file or folder of the job's artifacts (./outputs,
  logs), in the artifact store at ExperimentRun/dcid.<job>/<path>; MLflow's runs:/<job>/<path> means the same;
- azureml://jobs/<job>/outputs/<output>[/paths/<path>]: a named output, wherever the job wrote it.
A job's output is stored as the long datastore URI it resolves to (with the job's name in jobName), so
`models.download` and a deployment find the files as for any other model.
"""

import re
from dataclasses import dataclass

from emulator.domain.ids import WorkspaceRef
from emulator.domain.jobs import artifacts
from emulator.domain.storage import datastores
from emulator.errors import ValidationFailed

TARGET = "properties.modelUri"
ARTIFACTS = "artifacts"  # Azure's name for a job's own artifacts among its outputs
JOB_FORMS = ("azureml://jobs/<job>/outputs/artifacts/paths/<path>", "azureml://jobs/<job>/outputs/<output>")
_JOB = re.compile(r"^azureml://jobs/([^/]+)/outputs/([^/]+)(?:/paths/(.*)|/)?$", re.IGNORECASE | re.DOTALL)
_RUN = re.compile(r"^runs:/([^/?]+)/(.+)$", re.DOTALL)


@dataclass(frozen=True)
class JobSource:
    job: str
    output: str  # ARTIFACTS, or the name of one of the job's outputs
    path: str  # inside it, as given ("" for all of it)


def job_output_source(uri: str) -> JobSource | None:
    """The job output an azureml://jobs/... `uri` names (a model's path or a job's input), else None."""
    if match := _JOB.fullmatch(uri):
        return JobSource(match[1], match[2], match[3] or "")
    return None


def job_source(uri: str) -> JobSource | None:
    """The job output a model's `uri` names, or None when it is not a job's: then it must be a datastore URI."""
    if match := _JOB.fullmatch(uri):
        return JobSource(match[1], match[2], match[3] or "")
    if match := _RUN.fullmatch(uri):
        return JobSource(match[1], ARTIFACTS, match[2])
    if not uri.lower().startswith("azureml://"):
        raise ValidationFailed(f"{TARGET} must be a datastore URI ({datastores.SHORT_FORM} or "
                               f"{datastores.LONG_FORM}) or a job's output ({' or '.join(JOB_FORMS)}), got "
                               f"{uri[:200]!r}: amlemu serves model files from the workspace's datastores.",
                               target=TARGET)
    return None


def _store(ref: WorkspaceRef, where: datastores.BlobLocation) -> str:
    return next(d.name for d in datastores.defaults(ref) if (d.account, d.container) == (where.account, where.container))


def long_uri(ref: WorkspaceRef, where: datastores.BlobLocation, folder: bool = False) -> str:
    """The SDK's long datastore URI of a blob, or with `folder` of a folder: '/'-terminated as Azure writes
    output paths, so that a download by prefix cannot take in a sibling whose name merely starts the same."""
    suffix = "/" if folder and where.blob else ""
    return (f"azureml://subscriptions/{ref.subscription}/resourcegroups/{ref.resource_group}/workspaces/{ref.name}"
            f"/datastores/{_store(ref, where)}/paths/{where.blob}{suffix}")


def job_output_uri(ref: WorkspaceRef, job: str, outputs: dict[str, dict], source: JobSource,
                   target: str = TARGET) -> str:
    """Where a job's output lives, given the job's stored outputs ({name: {jobOutputType, uri?}})."""
    if source.output.lower() == ARTIFACTS:
        base = artifacts.location(ref, job)
    elif source.output in outputs:
        base = datastores.resolve_uri(ref, artifacts.output_uri(job, source.output, outputs[source.output]), target)
    else:
        named = ", ".join(sorted(outputs)) or "none"
        raise ValidationFailed(f"{target}: job '{job}' has no output named '{source.output}' (its named outputs: "
                               f"{named}; '{ARTIFACTS}' is its own ./outputs and logs).", target=target)
    inner = source.path.strip("/")
    # locate() checks the path's segments ('..' and the like), as for any datastore URI
    where = datastores.locate(ref, _store(ref, base), "/".join(p for p in (base.blob, inner) if p), target)
    return long_uri(ref, where, folder=not inner or source.path.endswith("/"))
