"""A pipeline keeps going through a restart of the api, the controller or redis while its first step runs and the
second waits for it, and through a SIGKILL of the controller or redis while the first step ends: every step keeps
its true state, none runs twice (each appends a line to its own datastore folder when it starts and when it ends),
and the pipeline completes."""

import uuid

import pytest
from azure.ai.ml import Input, Output, command
from azure.ai.ml.dsl import pipeline
from azure.ai.ml.entities import AmlCompute, Environment

from tests import gate
from tests.e2e.pipeline_runs import (
    datastore_folder,
    gated,
    release,
    statuses,
    steps,
    wait_ended,
    wait_for_steps,
)

pytestmark = [pytest.mark.e2e, pytest.mark.usefixtures("cluster")]
CLUSTER = "pipe-restarts"
NOTE = 'echo "{step} start $AZUREML_RUN_ID" >> ${{{{outputs.runs}}}}/runs.txt'
DONE = 'echo "{step} end $AZUREML_RUN_ID" >> ${{{{outputs.runs}}}}/runs.txt'


@pytest.fixture(scope="module")
def cluster(ml_client):
    ml_client.compute.begin_create_or_update(
        AmlCompute(name=CLUSTER, size="Standard_D2_v3", min_instances=1, max_instances=1,
                   idle_time_before_scale_down=120)).result()
    yield CLUSTER
    ml_client.compute.begin_delete(CLUSTER).result()


def _two_steps(tag: str):
    """first (held at a gate once it has noted its start) -> second, each noting its runs in a datastore folder."""
    env = Environment(image="python:3.11-slim")

    def runs(step: str) -> Output:
        return Output(type="uri_folder", mode="rw_mount",
                      path=f"azureml://datastores/workspaceblobstore/paths/pipeline-restarts/{tag}/{step}/")

    make_first = command(command=gated(f"{NOTE.format(step='first')} && {DONE.format(step='first')}"),
                    outputs={"runs": runs("first")}, environment=env)
    make_second = command(command=f"{NOTE.format(step='second')} && cat ${{{{inputs.before}}}}/runs.txt && "
                             f"{DONE.format(step='second')}",
                     inputs={"before": Input(type="uri_folder")}, outputs={"runs": runs("second")}, environment=env)

    @pipeline(default_compute=CLUSTER, experiment_name="amlemu-pipeline-restarts")
    def first_then_second():
        first = make_first()
        second = make_second(before=first.outputs.runs)
        return {"runs": second.outputs.runs}

    built = first_then_second()
    built.settings.force_rerun = True  # every parametrization runs its steps, none reuses another's
    return built


def _restart_while_first_runs(stack, ml_client, job_dir, name: str, service: str) -> None:
    """A graceful restart while first waits at its gate: afterwards the same child is still running, alone."""
    before = steps(ml_client, name)
    stack.compose("restart", service, capture=True)
    assert stack.wait_healthy(timeout=120)
    after = steps(ml_client, name)
    assert after["first"].name == before["first"].name and after["first"].status == "Running", statuses(ml_client,
                                                                                                           name)
    assert "second" not in after or after["second"].status == "NotStarted"
    assert ml_client.jobs.get(name).status == "Running"
    release(ml_client, job_dir, name, "first")


def _kill_while_first_ends(stack, ml_client, job_dir, name: str, service: str) -> None:
    """SIGKILL, then first ends while the service is down; the service comes back to what happened meanwhile."""
    gate_of_first = job_dir(steps(ml_client, name)["first"].name) / "outputs"
    stack.compose("kill", "-s", "SIGKILL", service, capture=True)
    gate.release(gate_of_first, timeout=60)
    stack.compose("start", service, capture=True)
    assert stack.wait_healthy(timeout=120)


@pytest.mark.parametrize(("service", "how"), [("api", "restart"), ("controller", "restart"), ("redis", "restart"),
                                              ("controller", "kill"), ("redis", "kill")])
def test_a_pipeline_survives_a_service_restart_with_each_step_run_once(stack, ml_client, job_dir, service, how):
    tag = f"{service}-{how}-{uuid.uuid4().hex[:6]}"
    name = ml_client.jobs.create_or_update(_two_steps(tag)).name
    before = wait_for_steps(ml_client, name, {"first": "Running"}, timeout=180)
    assert "second" not in before or before["second"].status == "NotStarted"  # waits for first's output

    if how == "kill":
        _kill_while_first_ends(stack, ml_client, job_dir, name, service)
    else:
        _restart_while_first_runs(stack, ml_client, job_dir, name, service)
    assert wait_ended(ml_client, name, timeout=180) == "Completed", statuses(ml_client, name)

    done = steps(ml_client, name)
    assert {step: child.status for step, child in done.items()} == {"first": "Completed", "second": "Completed"}
    first_runs = (datastore_folder(stack, f"pipeline-restarts/{tag}/first") / "runs.txt").read_text()
    assert first_runs == f"first start {done['first'].name}\nfirst end {done['first'].name}\n", first_runs
    second_runs = (datastore_folder(stack, f"pipeline-restarts/{tag}/second") / "runs.txt").read_text()
    assert second_runs == f"second start {done['second'].name}\nsecond end {done['second'].name}\n", second_runs
