"""Data assets through the unmodified azure-ai-ml SDK against the composed stack: a job reads a data asset
named `azureml:<name>@latest` (and another by `azureml:<name>:<version>`) and writes what it read; the next job
reads that output as azureml://jobs/<job>/outputs/<output>/paths/<file>."""

import uuid

import pytest
from azure.ai.ml import Input, Output, command
from azure.ai.ml.entities import AmlCompute, Data, Environment

from tests.waiting import wait_until

pytestmark = pytest.mark.e2e
CLUSTER = "data-e2e"


def _folder(root, texts: dict[str, str]):
    root.mkdir(parents=True)
    for name, text in texts.items():
        (root / name).write_text(text)
    return root


def test_a_job_reads_the_latest_data_asset_version(ml_client, tmp_path):
    name, file_name = f"rows-{uuid.uuid4().hex[:6]}", f"one-{uuid.uuid4().hex[:6]}"
    for version, texts in (("1", {"a.txt": "old"}), ("2", {"a.txt": "alpha", "b.txt": "beta"})):
        ml_client.data.create_or_update(Data(name=name, version=version, type="uri_folder",
                                             path=str(_folder(tmp_path / f"v{version}", texts))))
    (tmp_path / "one.txt").write_text("!")
    ml_client.data.create_or_update(Data(name=file_name, type="uri_file", path=str(tmp_path / "one.txt")))
    ml_client.compute.begin_create_or_update(
        AmlCompute(name=CLUSTER, size="Standard_DS3_v2", min_instances=0, max_instances=1,
                   idle_time_before_scale_down=5)).result()
    job = ml_client.jobs.create_or_update(command(
        command="cat ${{inputs.rows}}/*.txt ${{inputs.one}} > ${{outputs.joined}}/joined.txt",
        inputs={"rows": Input(type="uri_folder", path=f"azureml:{name}@latest"),
                "one": Input(type="uri_file", path=f"azureml:{file_name}:1")},
        outputs={"joined": Output(type="uri_folder")},
        environment=Environment(image="python:3.11-slim"), compute=CLUSTER))
    status = wait_until(lambda: (s := ml_client.jobs.get(job.name).status) in ("Completed", "Failed", "Canceled")
                        and s, timeout=300, interval=1.0, message=f"job {job.name} to end")
    assert status == "Completed", ml_client.jobs.get(job.name)
    shown = ml_client.jobs.get(job.name).inputs
    assert str(shown["rows"].path) == f"azureml:{name}:2" and str(shown["one"].path) == f"{file_name}:1"
    ml_client.jobs.download(job.name, download_path=str(tmp_path / "dl"), output_name="joined")
    assert (tmp_path / "dl" / "named-outputs" / "joined" / "joined.txt").read_text() == "alphabeta!"

    # another job's output, named as Azure's docs name it, read by the next job
    reread = ml_client.jobs.create_or_update(command(
        command="tr a-z A-Z < ${{inputs.joined}} > ${{outputs.loud}}/loud.txt",
        inputs={"joined": Input(type="uri_file", path=f"azureml://jobs/{job.name}/outputs/joined/paths/joined.txt")},
        outputs={"loud": Output(type="uri_folder")},
        environment=Environment(image="python:3.11-slim"), compute=CLUSTER))
    status = wait_until(lambda: (s := ml_client.jobs.get(reread.name).status) in ("Completed", "Failed", "Canceled")
                        and s, timeout=300, interval=1.0, message=f"job {reread.name} to end")
    assert status == "Completed", ml_client.jobs.get(reread.name)
    ml_client.jobs.download(reread.name, download_path=str(tmp_path / "dl2"), output_name="loud")
    assert (tmp_path / "dl2" / "named-outputs" / "loud" / "loud.txt").read_text() == "ALPHABETA!"
