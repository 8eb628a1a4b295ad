"""Submitting a pipeline job. Every step's component is resolved now and pinned (a later version does not change a
running pipeline), the bindings are checked as a graph (domain/jobs/pipeline_graph.py), and every step's child job
is submitted as a dry run in the graph's order (services.jobs, rolled back), so that a pipeline whose steps could
never run (no such compute, environment or code; a required input left unbound) is refused now, naming the step's
own field, and nothing is created.

The pipeline is then a parent job (domain/jobs/children.py) whose driver record (services/pipeline_driver.py) holds
each step's child name, component and the graph; the controller makes the children as their inputs come to exist.
"""

from collections.abc import Mapping
from dataclasses import asdict
from datetime import datetime
from graphlib import TopologicalSorter
from pathlib import Path

from emulator.domain.ids import WorkspaceRef
from emulator.domain.jobs import command_job, pipeline, pipeline_graph, pipeline_steps
from emulator.domain.jobs.status import JobStatus
from emulator.errors import EmulatorError, ValidationFailed
from emulator.services import components, data, jobs, workspaces
from emulator.store.repositories import Repository
from emulator.store.tables import Job

P, J = pipeline.P, pipeline.J
KIND = "pipeline"


def is_pipeline(body: object) -> bool:
    props = body.get(P) if isinstance(body, dict) else None
    return isinstance(props, dict) and props.get("jobType") == "Pipeline"


def _as_step_error(exc: EmulatorError, spec: pipeline.PipelineSpec, step: str) -> EmulatorError:
    """A child's refusal, said of the field that caused it: its `properties.inputs.x.uri` is the step's
    `properties.jobs.<step>.inputs.x.uri`, its compute the step's or the pipeline's default."""
    target = exc.target or ""
    if target == f"{P}.computeId" and spec.steps[step].compute_id is None:
        where = f"{pipeline.SETTINGS}.default_compute"
    elif target.startswith(P + ".") and not target.startswith(J):
        where = f"{J}.{step}.{target[len(P) + 1:]}"
    else:
        where = target or f"{J}.{step}"
    return type(exc)(f"Step '{step}' could not run: {exc.message}", target=where)


def _tried(repo: Repository, ref: WorkspaceRef, name: str, props: dict, spec: pipeline.PipelineSpec,
           found: Mapping[str, components.Resolved], graph: Mapping[str, set[str]], children: Mapping[str, str],
           now: datetime) -> str:
    """Every step's child, submitted in order and rolled back (a later step reads the earlier ones' outputs): the
    compute the first step runs on."""
    compute_key = ""
    with repo.savepoint(keep=False):
        for step in TopologicalSorter(graph).static_order():
            try:
                body = pipeline_steps.child_body(spec, props, step, found[step].spec, children, name)
                child, _ = jobs.put(repo, ref, children[step], body, now, None, {})
            except EmulatorError as exc:
                raise _as_step_error(exc, spec, step) from exc
            compute_key = compute_key or child.compute_key
    return compute_key


def put(repo: Repository, ref: WorkspaceRef, name: str, body: object, now: datetime,
        data_dir: Path | None = None, outside: Mapping[str, str | None] | None = None) -> tuple[Job, bool]:
    command_job.name(name)
    workspaces.get(repo, ref)
    props, spec = pipeline.parse(body)
    existing = repo.job(ref.child_id("jobs", name))
    if existing is not None:
        if (existing.driver or {}).get("kind") != KIND:
            raise ValidationFailed(f"Job '{name}' exists and is not a pipeline job.", target=f"{P}.jobType")
        return jobs.update(existing, props, now), False
    found = {step: components.resolve(repo, ref, each.component_id, f"{J}.{step}.componentId")
             for step, each in spec.steps.items()}
    graph = pipeline_graph.upstream(pipeline_steps.graph_steps(spec.steps, {s: c.spec for s, c in found.items()}),
                                    spec.inputs, spec.outputs)
    data.input_uris(repo, ref, spec.inputs, data_dir, outside)  # the pipeline's own inputs are there
    key = ref.child_id("jobs", name).lower()
    children = {step: pipeline_steps.child_name(key, step) for step in spec.steps}
    pipeline_steps.named_outputs(spec, props, children)
    spec = pipeline.spec_of(props)
    compute_key = _tried(repo, ref, name, props, spec, found, graph, children, now)
    steps = {step: {"child": children[step], "componentId": found[step].id, "component": asdict(found[step].spec)}
             for step in spec.steps}
    job = Job(key=key, workspace_key=ref.key, name=name, compute_key=compute_key, body=props,
              status=JobStatus.NOT_STARTED.value, created_at=now, modified_at=now, status_changed_at=now,
              history=[{"status": JobStatus.NOT_STARTED.value, "time": now.isoformat(), "attempt": 0}],
              driver={"kind": KIND, "steps": steps, "graph": {s: sorted(up) for s, up in graph.items()},
                      "ended": [], "outside": {}})
    jobs.submitted(repo, job, now)
    jobs.experiment(repo, ref.key, props["experimentName"])
    return job, True
