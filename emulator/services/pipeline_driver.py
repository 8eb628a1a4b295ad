"""The pipeline's driver (services/parents.py runs it): which steps to start, which to stop, and what its log says.

Its record (`job.driver`, written at submit by services/pipelines.py) holds each step's child name and pinned
component, and the graph of which steps read which; `ended` lists the children whose end the log has told.

- a step starts once every step it reads from has Completed (independent steps start in the same pass); its child
  is a command job through the same scheduler as any, and may reuse an earlier run (services/reuse.py);
- a step that fails (or is cancelled) fails the pipeline: the other live steps are cancelled and no more start,
  unless `continue_on_step_failure`, when only what reads from it never starts;
- the pipeline is done once every step has started or never can; its status rolls up from its children's (all must
  complete), as Azure's does.
"""

from collections.abc import Mapping, Sequence
from datetime import datetime

from emulator.domain.assets.components import ComponentSpec
from emulator.domain.jobs import artifacts, children, pipeline, pipeline_graph, pipeline_steps
from emulator.domain.jobs.status import TERMINAL, JobStatus
from emulator.services.parents import Plan
from emulator.services.reuse import Ask
from emulator.store.tables import Job

S = JobStatus
_LOST = (S.FAILED, S.CANCELED)


def _stamp(now: datetime, text: str) -> str:
    return f"[{now.strftime('%Y-%m-%d %H:%M:%SZ')}] {text}"


class PipelineDriver:
    outcome = children.Outcome.ALL_COMPLETED
    log_name = artifacts.PARENT_LOGS["Pipeline"]  # what the SDK streams for a pipeline

    def wanted(self, parent: Job, kids: Sequence[Job]) -> tuple[str, list[str]] | None:
        return None  # a pipeline reads no metric

    def decide(self, parent: Job, kids: Sequence[Job], series: Mapping[str, list[float]], now: datetime) -> Plan:
        record = parent.driver
        spec = pipeline.spec_of(parent.body)
        steps, graph = record["steps"], {s: set(up) for s, up in record["graph"].items()}
        by_name = {k.name: k for k in kids}
        made = {s: by_name[info["child"]] for s, info in steps.items() if info["child"] in by_name}
        completed = {s for s, kid in made.items() if kid.status == S.COMPLETED}
        failed = sorted(s for s, kid in made.items() if kid.status in _LOST)
        plan = Plan(record={**record, "ended": list(record["ended"])})
        self._told(plan, made, now)
        if failed:  # the steps that failed, not those stopped because of them
            plan.error = pipeline_steps.failure([s for s in failed if made[s].status == S.FAILED] or failed)
        if failed and not spec.continue_on_step_failure:
            plan.stop = {kid.name: f"Step '{failed[0]}' failed, so the pipeline stops." for kid in made.values()
                         if S(kid.status) not in TERMINAL and kid.status != S.CANCEL_REQUESTED}
            plan.done = True
            return plan
        blocked = pipeline_graph.downstream(graph, set(failed))
        ready = [s for s in pipeline_graph.ready(graph, completed, set(made)) if s not in blocked]
        names = {s: info["child"] for s, info in steps.items()}
        for step in ready:
            self._start(parent, spec, step, names, made, plan)
        if ready:
            plan.said.append(_stamp(now, f"Submitting {len(ready)} runs, first five are: " + ", ".join(
                f"{s}:{names[s]}" for s in ready[:5])))
        plan.done = set(made) | set(ready) | blocked == set(steps)
        return plan

    @staticmethod
    def _told(plan: Plan, made: Mapping[str, Job], now: datetime) -> None:
        for step, kid in made.items():
            if S(kid.status) in TERMINAL and kid.name not in plan.record["ended"]:
                plan.record["ended"].append(kid.name)
                plan.said.append(_stamp(now, f"Completing processing run id {kid.name} (step {step}: {kid.status})."))

    @staticmethod
    def _start(parent: Job, spec: pipeline.PipelineSpec, step: str, names: Mapping[str, str],
               made: Mapping[str, Job], plan: Plan) -> None:
        component = ComponentSpec(**parent.driver["steps"][step]["component"])
        body = pipeline_steps.child_body(spec, parent.body, step, component, names, parent.name)
        upstream = {f"azureml://jobs/{kid.name}/outputs/{out}": artifacts.output_uri(kid.name, out, entry)
                    for kid in made.values() for out, entry in (kid.body.get("outputs") or {}).items()}
        key = pipeline_steps.reuse_key(body, upstream, names[step], parent.name)
        plan.make.append((names[step], body))
        plan.reuse[names[step]] = Ask(key, component.is_deterministic and not spec.force_rerun)
