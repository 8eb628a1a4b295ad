"""A batch job's driver (services/parents.py runs it): its one step, `batchscoring`, is the parallel command job
(domain/jobs/parallel.py's `command_body`) made from the record services/batch_invoke.py wrote; the batch job ends
as its step does. Its log is a pipeline's (what `jobs.stream` prints), in Azure's words."""

from collections.abc import Mapping, Sequence
from datetime import datetime

from emulator.domain.jobs import artifacts, children, parallel
from emulator.domain.jobs.status import TERMINAL, JobStatus
from emulator.domain.serving.batch_jobs import STEP
from emulator.services.batch_invoke import BodyMaker, step_body
from emulator.services.parents import Plan
from emulator.store.tables import Job

S = JobStatus


def _stamp(now: datetime, text: str) -> str:
    return f"[{now.strftime('%Y-%m-%d %H:%M:%SZ')}] {text}"


class BatchDriver:
    outcome = children.Outcome.ALL_COMPLETED
    log_name = artifacts.PARENT_LOGS["Pipeline"]  # a batch job is a pipeline job: the SDK streams this log

    def __init__(self, make: BodyMaker = parallel.command_body):
        self.make = make

    def wanted(self, parent: Job, kids: Sequence[Job]) -> tuple[str, list[str]] | None:
        return None

    def decide(self, parent: Job, kids: Sequence[Job], series: Mapping[str, list[float]], now: datetime) -> Plan:
        record = parent.driver
        plan = Plan(record={**record, "ended": list(record.get("ended", []))}, done=True)
        step = next((kid for kid in kids if kid.name == record["child"]), None)
        if step is None:
            plan.make.append((record["child"], step_body(record, parent.body["experimentName"], self.make)))
            plan.said.append(_stamp(now, f"Submitting 1 runs, first five are: {STEP}:{record['child']}"))
            return plan
        if S(step.status) in TERMINAL and step.name not in plan.record["ended"]:
            plan.record["ended"].append(step.name)
            plan.said.append(_stamp(now, f"Completing processing run id {step.name} (step {STEP}: {step.status})."))
        if step.status == S.FAILED:
            why = (step.error or {}).get("message") or "it failed."
            plan.error = f"Pipeline has failed child jobs. Failed nodes: /{STEP}. {why}"
        return plan
