"""Where a job's files live in the blob store, under Azure's names. Pure.

A job's artifacts (what `jobs.download` brings back as `artifacts/`) sit in the artifact store at
ExperimentRun/dcid.<job>/: outputs/, logs/, user_logs/std_log.txt and azureml-logs/ (the image build).
"""

from pathlib import PurePosixPath

from emulator.domain.ids import WorkspaceRef
from emulator.domain.storage import datastores

BUILD_LOG = "azureml-logs/20_image_build_log.txt"


def location(ref: WorkspaceRef, job_name: str) -> datastores.BlobLocation:
    return datastores.locate(ref, datastores.ARTIFACT_STORE, f"ExperimentRun/dcid.{job_name}", "name")


def blob_dir(where: datastores.BlobLocation) -> str:
    """A blob folder as a path relative to the data directory."""
    return str(PurePosixPath("blobs", where.account, where.container, where.blob or "."))


def directory(ref: WorkspaceRef, job_name: str) -> str:
    return blob_dir(location(ref, job_name))


def log_name(rank: int, world_size: int) -> str:
    """Azure's names: one std_log.txt, or one per process for distributed jobs (rank 0's is what streams)."""
    return "user_logs/std_log.txt" if world_size == 1 else f"user_logs/std_log_process_{rank}.txt"


# The log a parent job's driver writes, by job type: what `jobs.stream` prints for it.
PARENT_LOGS = {"Sweep": "azureml-logs/hyperdrive.txt", "Pipeline": "logs/azureml/executionlogs.txt"}


def main_log(body: dict) -> str:
    """The log that tells a job's story: a parent's driver log, else rank 0's."""
    if body.get("jobType") in PARENT_LOGS:
        return PARENT_LOGS[body["jobType"]]
    return log_name(0, body["resources"]["instanceCount"])


def output_uri(job_name: str, name: str, entry: dict) -> str:
    """Where a named output goes: the path the user gave, else Azure's default in the workspace blob store."""
    return entry.get("uri") or f"azureml://datastores/{datastores.BLOB_STORE}/paths/azureml/{job_name}/{name}/"


def output_asset_id(location: str, workspace_guid: str, job_name: str, name: str) -> str:
    """The id RunHistory gives a job's output, in Azure's spelling; `output_of` reads it back."""
    return (f"azureml://locations/{location}/workspaces/{workspace_guid}/data/"
            f"azureml_{job_name}_output_data_{name}/versions/1")


def output_of(asset_id: str) -> list[tuple[str, str]]:
    """Every (job name, output name) an output asset id can mean: both names may contain '_'."""
    asset = asset_id.rstrip("/").split("/data/", 1)[-1].split("/versions/", 1)[0]
    if not asset.startswith("azureml_"):
        return []
    asset = asset[len("azureml_"):]
    marker = "_output_data_"
    return [(asset[:i], asset[i + len(marker):]) for i in range(len(asset)) if asset.startswith(marker, i)]
