"""The controller's parent-jobs step driving pipelines on a store of its own, the children moved by the test as the
job machinery would: a step starts once the steps it reads from completed (independent ones together), reads their
outputs where they were written, is made once across restarts; a failed step stops the pipeline (or, with
continue_on_step_failure, only what reads from it); an unchanged deterministic step reuses the earlier run unless
force_rerun; cancelling the pipeline cancels its steps."""

import pytest

from emulator.controller.reconcilers.parents import ParentReconciler
from emulator.domain.jobs import artifacts, pipeline_steps
from emulator.domain.jobs.status import JobStatus as S
from emulator.services import components, jobs, pipelines
from emulator.services.pipeline_driver import PipelineDriver

ENV = "py"
STEP_CMD = "python run.py $[[--in ${{inputs.data}}]] --n ${{inputs.n}} --out ${{outputs.out}}"


def component(azure, name: str, deterministic: bool = True) -> str:
    spec = {"name": name, "version": "1", "type": "command", "command": STEP_CMD, "is_deterministic": deterministic,
            "environment": azure.ref.child_id("environments", ENV) + "/versions/1",
            "inputs": {"data": {"type": "uri_folder", "optional": True}, "n": {"type": "integer", "default": "1"}},
            "outputs": {"out": {"type": "uri_folder"}}}
    with azure.store.transaction() as repo:
        components.put(repo, azure.ref, name, "1", {"properties": {"componentSpec": spec}}, azure.clock())
    return f"azureml:{name}:1"


@pytest.fixture
def ready(azure, py_and_cpu) -> dict[str, str]:
    """Two step components (conftest's environment and cluster): one deterministic, one not."""
    return {"step": component(azure, "step"), "random": component(azure, "random_step", deterministic=False)}


def step(component_id: str, data: str | None = None, n: str = "2", **more) -> dict:
    inputs = {"n": {"job_input_type": "literal", "value": n}}
    if data:
        inputs["data"] = {"job_input_type": "literal", "value": data}
    return {"type": "command", "componentId": component_id, "inputs": inputs, **more}


def body(azure, ready, settings=None, **steps) -> dict:
    """a → b (b reads a's output), and c on its own; b's output is the pipeline's `final`."""
    steps = steps or {"a": step(ready["step"]),
                      "b": step(ready["step"], "${{parent.jobs.a.outputs.out}}",
                                outputs={"out": {"type": "literal", "value": "${{parent.outputs.final}}"}}),
                      "c": step(ready["step"], n="3")}
    return {"properties": {"jobType": "Pipeline", "jobs": steps, "outputs": {"final": {"jobOutputType": "uri_folder"}},
                           "settings": {"default_compute": azure.ref.child_id("computes", "cpu"), **(settings or {})}}}


def driver(azure) -> ParentReconciler:
    """A controller's parents step; a new one is a restarted controller."""
    return ParentReconciler(azure.settings, azure.store, azure.clock, lambda keys, metric: {},
                            {pipelines.KIND: PipelineDriver()})


def submit(azure, name: str, payload: dict) -> dict[str, str]:
    with azure.store.transaction() as repo:
        job, _ = pipelines.put(repo, azure.ref, name, payload, azure.clock())
        return {s: info["child"] for s, info in job.driver["steps"].items()}


def state(azure, name: str) -> tuple[str, dict[str, str]]:
    """The pipeline's status and its children's, by step."""
    with azure.store.transaction() as repo:
        parent = jobs.get(repo, azure.ref, name)
        return parent.status, {c.body["displayName"]: c.status for c in repo.children(parent.key)}


def end(azure, child: str, status: S = S.COMPLETED) -> None:
    """What the job machinery does with a step's child (tests/unit/controller/test_job_pass.py covers it)."""
    with azure.store.transaction() as repo:
        job = jobs.get(repo, azure.ref, child)
        path = (S.NOT_STARTED, S.STARTING, S.PREPARING, S.QUEUED, S.RUNNING, S.FINALIZING, S.COMPLETED)
        ahead = path[path.index(S(job.status)) + 1:path.index(status) + 1] if status in path else (status,)
        for each in ahead:  # Failed and Canceled are reachable from any live status
            jobs.transition(job, each, azure.clock())


def child(azure, name: str):
    with azure.store.transaction() as repo:
        return jobs.get(repo, azure.ref, name)


def test_steps_start_when_their_inputs_exist_read_them_and_roll_up(azure, ready):
    names = submit(azure, "p", body(azure, ready))
    assert names["a"] == pipeline_steps.child_name(azure.ref.child_id("jobs", "p").lower(), "a")
    driver(azure).tick()
    assert state(azure, "p") == ("Running", {"a": "NotStarted", "c": "NotStarted"})  # independent steps together
    driver(azure).tick()  # a restarted controller makes nothing twice
    assert len(state(azure, "p")[1]) == 2
    first = child(azure, names["a"])
    assert first.compute_key == azure.key("cpu") and first.body["inputs"]["n"] == {"jobInputType": "literal",
                                                                                   "value": "2"}
    assert "data" not in first.body["inputs"]  # optional and unbound
    end(azure, names["a"])
    driver(azure).tick()
    b = child(azure, names["b"])
    assert b.body["inputs"]["data"]["uri"] == f"azureml://jobs/{names['a']}/outputs/out"
    assert b.body["outputs"]["out"]["uri"] == artifacts.output_uri("p", "final", {})  # where the pipeline's is
    end(azure, names["b"])
    driver(azure).tick()
    assert state(azure, "p")[0] == "Running"  # c still runs
    end(azure, names["c"])
    driver(azure).tick()
    assert state(azure, "p") == ("Completed", {"a": "Completed", "b": "Completed", "c": "Completed"})
    log = azure.settings.data_dir / artifacts.directory(azure.ref, "p") / "logs/azureml/executionlogs.txt"
    text = log.read_text()
    assert f"Submitting 2 runs, first five are: a:{names['a']}, c:{names['c']}" in text
    assert f"Completing processing run id {names['b']}" in text


def test_a_failed_step_stops_the_pipeline(azure, ready):
    names = submit(azure, "p", body(azure, ready))
    driver(azure).tick()
    end(azure, names["c"], S.RUNNING)
    end(azure, names["a"], S.FAILED)
    driver(azure).tick()
    status, steps = state(azure, "p")
    assert steps == {"a": "Failed", "c": "CancelRequested"} and status == "Running"  # b never starts
    end(azure, names["c"], S.CANCELED)
    driver(azure).tick()
    assert state(azure, "p")[0] == "Failed"
    assert child(azure, "p").error["message"].startswith("Pipeline has failed child jobs. Failed nodes: /a.")


def test_continue_on_step_failure_runs_what_does_not_read_the_failed_step(azure, ready):
    names = submit(azure, "p", body(azure, ready, settings={"continue_on_step_failure": True}))
    driver(azure).tick()
    end(azure, names["a"], S.FAILED)
    driver(azure).tick()
    assert state(azure, "p") == ("Running", {"a": "Failed", "c": "NotStarted"})
    end(azure, names["c"])
    driver(azure).tick()
    assert state(azure, "p") == ("Failed", {"a": "Failed", "c": "Completed"})


def run_through(azure, name: str, payload: dict) -> dict[str, str]:
    names = submit(azure, name, payload)
    for _ in range(3):
        driver(azure).tick()
        for each in names.values():
            with azure.store.transaction() as repo:
                made = repo.job(azure.ref.child_id("jobs", each))
            if made is not None and made.status == S.NOT_STARTED:
                end(azure, each)
    driver(azure).tick()
    return names


def test_an_unchanged_step_reuses_the_earlier_run_unless_forced(azure, ready):
    first = run_through(azure, "p1", body(azure, ready))
    names = submit(azure, "p2", body(azure, ready))
    driver(azure).tick()
    a = child(azure, names["a"])
    assert a.status == "Completed" and a.started_at is None  # never ran
    assert a.body["properties"][pipeline_steps.REUSED_FLAG] == "true"
    assert a.body["properties"][pipeline_steps.REUSED_RUN] == first["a"]
    assert a.body["outputs"]["out"]["uri"] == artifacts.output_uri(first["a"], "out", {})
    driver(azure).tick()
    b = child(azure, names["b"])  # reads a's output where the earlier run wrote it: the same inputs, reused too
    assert b.status == "Completed" and b.body["properties"][pipeline_steps.REUSED_RUN] == first["b"]
    assert child(azure, "p2").body["outputs"]["final"]["uri"] == artifacts.output_uri("p1", "final", {})
    assert state(azure, "p2")[0] == "Completed"
    forced = submit(azure, "p3", body(azure, ready, settings={"force_rerun": True}))
    driver(azure).tick()
    assert child(azure, forced["a"]).status == "NotStarted"
    changed = submit(azure, "p4", body(azure, ready, a=step(ready["step"], n="9")))
    driver(azure).tick()
    assert child(azure, changed["a"]).status == "NotStarted"  # another input value: runs


def test_a_step_that_is_not_deterministic_is_never_reused(azure, ready):
    run_through(azure, "p1", body(azure, ready, a=step(ready["random"])))
    names = submit(azure, "p2", body(azure, ready, a=step(ready["random"])))
    driver(azure).tick()
    assert child(azure, names["a"]).status == "NotStarted"


def test_cancelling_the_pipeline_cancels_its_steps(azure, ready):
    names = submit(azure, "p", body(azure, ready))
    driver(azure).tick()
    end(azure, names["a"], S.RUNNING)
    with azure.store.transaction() as repo:
        jobs.cancel(repo, azure.ref, "p", azure.clock())
    assert state(azure, "p") == ("CancelRequested", {"a": "CancelRequested", "c": "Canceled"})
    end(azure, names["a"], S.CANCELED)
    driver(azure).tick()
    assert state(azure, "p") == ("Canceled", {"a": "Canceled", "c": "Canceled"})  # b was never made
