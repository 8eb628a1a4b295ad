"""Pipelines' parallel steps with the real SDK: a job file with a `type: parallel` step written as Microsoft's docs
write one, and a `parallel_run_function` DSL pipeline. Each step's child runs on two nodes of the cluster with two
workers each; a mini-batch that fails once is retried; the rows come back in `parallel_run_step.txt` of the bound
output, every file once; the step's logs are Azure's."""

from pathlib import Path

import pytest
from azure.ai.ml import Input, Output, dsl, load_job
from azure.ai.ml.entities import AmlCompute, Environment
from azure.ai.ml.parallel import RunFunction, parallel_run_function

from tests.e2e.pipeline_runs import steps, wait_ended

pytestmark = [pytest.mark.e2e, pytest.mark.usefixtures("cluster")]
FILES = Path(__file__).parent / "docs_parallel"
CLUSTER = "par-cluster"  # the name the job file uses
ROWS = [f"img{n:02d}.txt pixel-{n:02d}" for n in range(1, 11)]


@pytest.fixture(scope="module")
def cluster(ml_client):
    ml_client.compute.begin_create_or_update(
        AmlCompute(name=CLUSTER, size="Standard_D2_v3", min_instances=0, max_instances=2,
                   idle_time_before_scale_down=120)).result()
    yield
    ml_client.compute.begin_delete(CLUSTER).result()


def _scores(ml_client, name: str, tmp_path: Path) -> list[str]:
    ml_client.jobs.download(name, output_name="scores", download_path=tmp_path)
    return (tmp_path / "named-outputs" / "scores" / "parallel_run_step.txt").read_text().splitlines()


def test_a_docs_parallel_step_scores_every_file_once_on_two_nodes(ml_client, job_dir, tmp_path):
    created = ml_client.jobs.create_or_update(load_job(FILES / "score-files.yml"))
    assert wait_ended(ml_client, created.name, timeout=180) == "Completed"
    assert _scores(ml_client, created.name, tmp_path) == [f"{row} yaml" for row in ROWS]
    child = steps(ml_client, created.name)["score"]
    logs = job_dir(child.name) / "logs"
    assert "Retried mini batches: 1" in (logs / "job_progress_overview.txt").read_text()
    assert "a transient failure on img04.txt" in (logs / "user" / "error.txt").read_text()
    assert len(list((logs / "user" / "stdout").iterdir())) == 2  # two nodes
    assert len(list((logs / "user" / "stdout").rglob("*.stdout.txt"))) == 4  # of two workers each


def test_a_parallel_run_function_pipeline(ml_client, tmp_path):
    score = parallel_run_function(
        name="score_files", display_name="Score files", inputs={"images": Input(type="uri_folder")},
        outputs={"scores": Output(type="uri_folder")}, input_data="${{inputs.images}}", instance_count=2,
        max_concurrency_per_instance=2, mini_batch_size="4", mini_batch_error_threshold=-1, error_threshold=-1,
        retry_settings={"max_retries": 1, "timeout": 60}, logging_level="INFO",
        task=RunFunction(code=str(FILES / "src"), entry_script="score.py",
                         environment=Environment(image="python:3.11-slim"), program_arguments="--suffix dsl",
                         append_row_to="${{outputs.scores}}"))

    @dsl.pipeline(default_compute=CLUSTER)
    def scoring(images):
        return {"scores": score(images=images).outputs.scores}

    created = ml_client.jobs.create_or_update(scoring(images=Input(type="uri_folder", path=str(FILES / "images"))))
    assert wait_ended(ml_client, created.name, timeout=180) == "Completed"
    assert _scores(ml_client, created.name, tmp_path) == [f"{row} dsl" for row in ROWS]
