"""A user's integration test of a training step, as it sits in their own repository: the amlemu plugin's
`ml_client` fixture is an MLClient on a stack of the session's own."""

from pathlib import Path

from azure.ai.ml import Input, command
from azure.ai.ml.entities import AmlCompute, Environment

HERE = Path(__file__).parent


def test_training_job_completes(ml_client, tmp_path):
    ml_client.compute.begin_create_or_update(
        AmlCompute(name="cpu", size="Standard_DS2_v2", min_instances=0, max_instances=1)).result()
    data = tmp_path / "data.csv"
    data.write_text("x\n1\n2\n6\n")
    job = ml_client.jobs.create_or_update(command(
        code=str(HERE / "train"), command="python main.py ${{inputs.data}}",
        inputs={"data": Input(type="uri_file", path=str(data))},  # uploaded to the workspace's blob store
        environment=Environment(image="python:3.11-slim"), compute="cpu", experiment_name="user-ci"))
    ml_client.jobs.stream(job.name)
    assert ml_client.jobs.get(job.name).status == "Completed"
    ml_client.jobs.download(job.name, download_path=tmp_path / "out", all=True)
    assert "mean=3.0" in next((tmp_path / "out").rglob("model.txt")).read_text()


def test_the_session_stack_is_its_own(amlemu, ml_client):
    assert amlemu.owned and amlemu.url.startswith("https://localhost:")
    assert ml_client.workspaces.get(ml_client.workspace_name).name == ml_client.workspace_name
