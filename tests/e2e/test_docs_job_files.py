"""Job files written the way Microsoft's documentation writes them, loaded with `load_job` and submitted with the
unmodified SDK: no compute (serverless), Docker Hub image names, a job tier. They complete, and the compute list
shows nothing the user did not make."""

from pathlib import Path

import httpx
import pytest
from azure.ai.ml import Input, command, load_job
from azure.ai.ml.entities import Environment

from tests.waiting import wait_until

pytestmark = pytest.mark.e2e
FILES = Path(__file__).parent / "docs_jobs"


def _completed(ml_client, name: str) -> str:
    status = wait_until(lambda: (s := ml_client.jobs.get(name).status) in ("Completed", "Failed", "Canceled") and s,
                        timeout=300, interval=0.5, message=f"job {name} to end")
    return status


@pytest.mark.parametrize(("file", "printed"), [("hello-serverless.yml", "hello world"),
                                                ("hello-spot.yml", "hello from 3.11")])
def test_a_documented_job_file_runs_on_serverless_compute(ml_client, stack, job_dir, file, printed):
    job = ml_client.jobs.create_or_update(load_job(FILES / file))
    assert job.compute is None  # as Azure shows a serverless job
    status = _completed(ml_client, job.name)
    log = (job_dir(job.name) / "user_logs" / "std_log.txt").read_text()
    assert status == "Completed", log[-2000:]
    assert printed in log
    assert all("serverless" not in c.name for c in ml_client.compute.list())
    page = httpx.get(ml_client.jobs.get(job.name).studio_url, verify=str(stack.ca_file))  # as a browser opens it
    assert page.status_code == 200 and "Completed" in page.text and printed in page.text


def test_a_curated_environment_builds_from_pypi_once_and_runs_the_training_script(ml_client, job_dir):
    """The first job builds the sklearn-1.5 stand-in (its log says what it installs); its script imports what the
    curated environment carries."""
    job = ml_client.jobs.create_or_update(load_job(FILES / "sklearn-curated.yml"))
    assert job.environment == "AzureML-sklearn-1.5:1"
    status = wait_until(lambda: (s := ml_client.jobs.get(job.name).status) in ("Completed", "Failed") and s,
                        timeout=900, interval=1, message=f"job {job.name} to end (a first build downloads wheels)")
    folder = job_dir(job.name)
    log = (folder / "user_logs" / "std_log.txt").read_text()
    assert status == "Completed", log[-3000:] + (folder / "azureml-logs" / "20_image_build_log.txt").read_text()[-3000:]
    assert "scikit-learn 1.5." in log and "training accuracy" in log
    assert "accuracy" in (folder / "outputs" / "metrics.json").read_text()
    assert ml_client.environments.get("AzureML-sklearn-1.5", version="1").image.startswith("mcr.microsoft.com/azureml/")


def test_a_download_is_the_jobs_own_copy_direct_is_the_uri_and_a_mount_is_read_only(ml_client, job_dir):
    first = ml_client.jobs.create_or_update(load_job(FILES / "modes.yml"))
    assert _completed(ml_client, first.name) == "Completed"
    log = (job_dir(first.name) / "user_logs" / "std_log.txt").read_text()
    assert "a,b" in log and "changed" in log and "direct: azureml://datastores/workspaceblobstore/paths/" in log
    second = ml_client.jobs.create_or_update(load_job(FILES / "read-only.yml"))
    assert _completed(ml_client, second.name) == "Completed"
    log = (job_dir(second.name) / "user_logs" / "std_log.txt").read_text()
    assert "a,b\n1,2" in log and "read-only as documented" in log and "changed" not in log


def test_an_output_with_a_name_and_version_is_a_data_asset_once_the_job_completes(ml_client, tmp_path):
    job = ml_client.jobs.create_or_update(load_job(FILES / "named-output.yml"))
    assert _completed(ml_client, job.name) == "Completed"
    asset = ml_client.data.get("docs-clean-rows", version="7")
    assert asset.type == "uri_folder" and f"/{job.name}/clean" in asset.path
    reader = ml_client.jobs.create_or_update(command(command="cat ${{inputs.rows}}/rows.csv",
                                                     inputs={"rows": Input(type="uri_folder",
                                                                           path="azureml:docs-clean-rows:7")},
                                                     environment=Environment(image="python:3.11-slim")))
    assert _completed(ml_client, reader.name) == "Completed"
