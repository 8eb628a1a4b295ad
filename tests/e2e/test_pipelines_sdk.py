"""Pipeline jobs with the real SDK: job files written the way Microsoft's docs write them (inline command steps,
registered components by version and @latest, bindings to the pipeline's inputs and outputs and to other steps'
outputs) and a `@pipeline` DSL pipeline. Each step is a child job on its compute, started once the steps it reads
from completed, independent steps side by side; `jobs.stream` and `jobs.download` of the pipeline; cancelling it;
a failed step failing the pipeline (and stopping the rest unless `continue_on_step_failure`); reuse of a step
already run with the same component and inputs, unless forced or not deterministic; pipelines refused with a 400
naming the field, creating nothing."""

import io
import uuid
from contextlib import redirect_stdout
from pathlib import Path

import pytest
import yaml
from azure.ai.ml import Output, command, load_component, load_job
from azure.ai.ml.dsl import pipeline
from azure.ai.ml.entities import AmlCompute, ComputeInstance, Environment, PipelineJob
from azure.ai.ml.exceptions import JobException
from azure.core.exceptions import HttpResponseError, ResourceNotFoundError

from tests.e2e.pipeline_runs import (
    datastore_folder,
    gated,
    release,
    statuses,
    steps,
    wait_ended,
    wait_for_steps,
)

pytestmark = [pytest.mark.e2e, pytest.mark.usefixtures("computes")]
FILES = Path(__file__).parent / "docs_pipelines"
CLUSTER, INSTANCE = "pipe-cluster", "pipe-ci"  # the names the job files use
IMAGE = "python:3.11-slim"
NOT_RUN = (None, "NotStarted", "Canceled")  # a step that never started: not listed, or listed but never run


@pytest.fixture(scope="module")
def computes(ml_client):
    instance = ml_client.compute.begin_create_or_update(ComputeInstance(name=INSTANCE, size="Standard_DS3_v2"))
    ml_client.compute.begin_create_or_update(
        AmlCompute(name=CLUSTER, size="Standard_D2_v3", min_instances=0, max_instances=2,
                   idle_time_before_scale_down=120)).result()
    instance.result()
    yield
    ml_client.compute.begin_delete(CLUSTER).result()
    ml_client.compute.begin_delete(INSTANCE).result()


@pytest.fixture(scope="module")
def components(ml_client):
    """pipeline_greet:1, and pipeline_shout in two versions: the second (the latest) adds a '!'."""
    ml_client.components.create_or_update(load_component(FILES / "components" / "greet.yml"))
    ml_client.components.create_or_update(load_component(FILES / "components" / "shout.yml"))
    louder = load_component(FILES / "components" / "shout.yml")
    louder.version, louder.command = "2", louder.command.replace(" > ", " | sed 's/$/!/' > ")
    ml_client.components.create_or_update(louder)


def _times(text: str) -> dict[str, float]:
    """'left start 1700000000.1' lines: {'left start': 1700000000.1, ...}."""
    return {line.rsplit(" ", 1)[0]: float(line.rsplit(" ", 1)[1]) for line in text.splitlines() if line.strip()}


def test_a_docs_pipeline_fans_out_runs_independent_steps_together_and_joins(ml_client, stack, job_dir, tmp_path):
    job = load_job(FILES / "hello-pipeline-fan.yml")
    for side in ("left", "right"):
        job.jobs[side].command = gated(job.jobs[side].command)
    created = ml_client.jobs.create_or_update(job)
    assert isinstance(created, PipelineJob) and created.status in ("NotStarted", "Running"), created.status

    # prep has completed; left and right, which both read its output, run at the same time; join waits for both
    running = wait_for_steps(ml_client, created.name, {"prep": "Completed", "left": "Running", "right": "Running"},
                             timeout=240)
    assert "join" not in running or running["join"].status == "NotStarted"
    assert ml_client.jobs.get(created.name).status == "Running"
    release(ml_client, job_dir, created.name, "left", "right")  # once both have started: they overlap
    out = io.StringIO()
    with redirect_stdout(out):
        ml_client.jobs.stream(created.name)  # returns once the pipeline has ended

    assert ml_client.jobs.get(created.name).status == "Completed", statuses(ml_client, created.name)
    children = steps(ml_client, created.name)
    assert {step: child.status for step, child in children.items()} == dict.fromkeys(
        ("prep", "left", "right", "join"), "Completed")
    assert {step: child.compute for step, child in children.items()} == {
        "prep": CLUSTER, "left": CLUSTER, "right": CLUSTER, "join": INSTANCE}  # join names its own compute
    assert all(child.name in out.getvalue() for child in children.values()), out.getvalue()  # executionlogs.txt

    # the pipeline's output is join's: what the literal input, the environment variable and the steps made of it
    ml_client.jobs.download(created.name, output_name="report", download_path=str(tmp_path))
    report = tmp_path / "named-outputs" / "report"
    assert (report / "report.txt").read_text() == "port: hello pipeline\nstarboard: hello pipeline\n"
    times = _times((report / "times.txt").read_text())
    assert times["left start"] < times["right end"] and times["right start"] < times["left end"]  # overlapped
    assert times["join start"] > max(times["left end"], times["right end"])  # after both
    # an output path with ${{name}}: the step's own job name
    prepared = datastore_folder(stack, f"amlemu-pipelines/{children['prep'].name}/prepared")
    assert (prepared / "greeting.txt").read_text() == "hello pipeline\n"


@pytest.mark.usefixtures("components")
def test_registered_component_steps_by_version_and_latest_run_on_serverless_compute(ml_client, tmp_path):
    job = ml_client.jobs.create_or_update(load_job(FILES / "registered-components.yml"))
    assert wait_ended(ml_client, job.name) == "Completed", statuses(ml_client, job.name)
    assert statuses(ml_client, job.name) == {"greet_job": "Completed", "shout_job": "Completed"}
    ml_client.jobs.download(job.name, output_name="pipeline_shouted", download_path=str(tmp_path))
    shouted = (tmp_path / "named-outputs" / "pipeline_shouted" / "greeting.txt").read_text()
    assert shouted.startswith("GOOD MORNING ") and shouted.endswith("!\n"), shouted  # pipeline_shout:2, the latest
    assert all("serverless" not in c.name for c in ml_client.compute.list())


def _greet_and_stamp(ml_client, greeting: str) -> PipelineJob:
    """A DSL pipeline: a registered component's step (deterministic) beside an inline one that is not."""
    greet = ml_client.components.get("pipeline_greet", version="1")
    stamp = command(command="cat /proc/sys/kernel/random/uuid > ${{outputs.stamp}}/stamp.txt",
                    outputs={"stamp": Output(type="uri_folder")}, environment=Environment(image=IMAGE),
                    is_deterministic=False)

    @pipeline(default_compute=CLUSTER, experiment_name="amlemu-pipelines")
    def greet_and_stamp(greeting: str):
        greeted = greet(greeting=greeting)
        stamped = stamp()
        return {"greeting": greeted.outputs.greeted, "stamp": stamped.outputs.stamp}

    return greet_and_stamp(greeting=greeting)


def _run(ml_client, job: PipelineJob, download_to: Path) -> tuple[dict, str, str]:
    """Submit, wait for Completed; the steps and the two outputs' contents."""
    job = ml_client.jobs.create_or_update(job)
    assert wait_ended(ml_client, job.name) == "Completed", statuses(ml_client, job.name)
    texts = []
    for output, file in (("greeting", "greeting.txt"), ("stamp", "stamp.txt")):
        ml_client.jobs.download(job.name, output_name=output, download_path=str(download_to))
        texts.append((download_to / "named-outputs" / output / file).read_text())
    return steps(ml_client, job.name), *texts


@pytest.mark.usefixtures("components")
def test_a_resubmitted_step_is_reused_unless_forced_or_not_deterministic(ml_client, tmp_path):
    first, greeting, stamp = _run(ml_client, _greet_and_stamp(ml_client, "hello dsl"), tmp_path / "first")
    assert set(first) == {"greeted", "stamped"} and greeting.startswith("hello dsl ")
    assert all(child.properties.get("azureml.isreused") != "true" for child in first.values())

    again, greeting_again, stamp_again = _run(ml_client, _greet_and_stamp(ml_client, "hello dsl"), tmp_path / "again")
    reused = again["greeted"]
    assert reused.status == "Completed"
    assert reused.properties.get("azureml.isreused") == "true", reused.properties
    assert reused.properties.get("azureml.reusedrunid") == first["greeted"].name
    assert greeting_again == greeting  # the earlier run's output: the command did not run again
    assert again["stamped"].properties.get("azureml.isreused") != "true"  # is_deterministic: false
    assert stamp_again != stamp

    forced = _greet_and_stamp(ml_client, "hello dsl")
    forced.settings.force_rerun = True
    rerun, greeting_rerun, _ = _run(ml_client, forced, tmp_path / "forced")
    assert all(child.properties.get("azureml.isreused") != "true" for child in rerun.values())
    assert greeting_rerun != greeting and greeting_rerun.startswith("hello dsl ")


def _failing(ml_client, continue_on_step_failure: bool, hold: tuple[str, ...] = (), compute: str = CLUSTER) -> str:
    job = load_job(FILES / "step-failure.yml")
    job.settings.continue_on_step_failure = continue_on_step_failure
    job.settings.default_compute = compute
    for step in hold:
        job.jobs[step].command = gated(job.jobs[step].command)
    return ml_client.jobs.create_or_update(job).name


def test_cancelling_a_pipeline_cancels_its_running_and_pending_steps(ml_client):
    name = _failing(ml_client, False, hold=("fails", "slow"))
    wait_for_steps(ml_client, name, {"fails": "Running", "slow": "Running"}, timeout=240)
    ml_client.jobs.begin_cancel(name).result()
    assert wait_ended(ml_client, name, timeout=120) == "Canceled"
    seen = statuses(ml_client, name)
    assert seen["fails"] == seen["slow"] == "Canceled", seen
    assert seen.get("after_fails") in NOT_RUN and seen.get("after_slow") in NOT_RUN, seen


def test_a_failed_step_fails_the_pipeline_and_stops_the_rest(ml_client, job_dir):
    name = _failing(ml_client, False, hold=("fails", "slow"))
    wait_for_steps(ml_client, name, {"fails": "Running", "slow": "Running"}, timeout=240)
    release(ml_client, job_dir, name, "fails")  # it exits 3; slow is still at its gate
    with pytest.raises(JobException) as failed:
        ml_client.jobs.stream(name)
    assert "Pipeline has failed child jobs. Failed nodes: /fails" in str(failed.value), str(failed.value)
    assert ml_client.jobs.get(name).status == "Failed"
    seen = statuses(ml_client, name)
    assert seen["fails"] == "Failed" and seen["slow"] == "Canceled", seen
    assert seen.get("after_fails") in NOT_RUN and seen.get("after_slow") in NOT_RUN, seen


def test_with_continue_on_step_failure_the_independent_branch_still_finishes(ml_client):
    name = _failing(ml_client, True, compute=INSTANCE)  # a compute instance as the pipeline's default compute
    assert wait_ended(ml_client, name) == "Failed"
    children = steps(ml_client, name)
    assert {child.compute for child in children.values()} == {INSTANCE}
    seen = statuses(ml_client, name)
    assert seen["fails"] == "Failed" and seen["slow"] == "Completed" and seen["after_slow"] == "Completed", seen
    assert seen.get("after_fails") in NOT_RUN, seen


def _bad_fan(tmp_path: Path, case: str) -> PipelineJob:
    """The fan pipeline, broken as `case` says, the way the SDK still sends it."""
    if case == "cycle":  # prep also reads join's output: prep -> left -> join -> prep
        data = yaml.safe_load((FILES / "hello-pipeline-fan.yml").read_text())
        data["jobs"]["prep"]["inputs"]["back"] = "${{parent.jobs.join.outputs.report}}"
        data["jobs"]["join"]["outputs"]["report"] = {"type": "uri_folder"}
        data.pop("outputs")
        (tmp_path / "cycle.yml").write_text(yaml.safe_dump(data))
        return load_job(tmp_path / "cycle.yml")
    job = load_job(FILES / "hello-pipeline-fan.yml")  # the SDK itself refuses a file naming a missing step
    job.jobs["left"].inputs.prepared = {"missing_step": "${{parent.jobs.nope.outputs.prepared}}",
                                        "missing_output": "${{parent.jobs.prep.outputs.nope}}"}[case]
    return job


def _bad(tmp_path: Path, case: str) -> PipelineJob:
    if case == "missing_version":
        data = yaml.safe_load((FILES / "registered-components.yml").read_text())
        data["jobs"]["greet_job"]["component"] = "azureml:pipeline_greet:99"
        (tmp_path / "no-version.yml").write_text(yaml.safe_dump(data))
        return load_job(tmp_path / "no-version.yml")
    return _bad_fan(tmp_path, case)


@pytest.mark.parametrize(("case", "field"), [("missing_step", "properties.jobs.left.inputs.prepared"),
                                             ("missing_output", "properties.jobs.left.inputs.prepared"),
                                             ("cycle", "properties.jobs."),
                                             ("missing_version", "properties.jobs.greet_job")])
@pytest.mark.usefixtures("components")
def test_a_broken_pipeline_is_refused_naming_the_field_and_creates_nothing(ml_client, tmp_path, case, field):
    job = _bad(tmp_path, case)
    job.name = f"broken-{uuid.uuid4().hex[:8]}"
    with pytest.raises(HttpResponseError) as refused:
        ml_client.jobs.create_or_update(job)
    assert refused.value.status_code == 400 and field in str(refused.value), str(refused.value)
    with pytest.raises(ResourceNotFoundError):
        ml_client.jobs.get(job.name)
