"""Where a job's files live in the blob store, under Azure's names. Pure.

A job's artifacts (what `jobs.download` brings back as `artifacts/`) sit in the artifact store at
ExperimentRun/dcid.<job>/: outputs/, logs/, user_logs/std_log.txt and azureml-logs/ (the image build).
"""

from pathlib import PurePosixPath

from emulator.domain import datastores
from emulator.domain.ids import WorkspaceRef

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
