"""Reuse of an earlier run of a pipeline step, as Azure reuses a deterministic component's run: a step whose reuse
key (domain/jobs/pipeline_steps.py) equals that of a Completed step in the same workspace completes at once, its
outputs being the earlier run's, and says so (`azureml.isreused`, `azureml.reusedrunid`, which the SDK's download
follows). A pipeline output bound to such a step's output then lives where the earlier run wrote it.
"""

from dataclasses import dataclass
from datetime import datetime

from emulator.domain.jobs import artifacts
from emulator.domain.jobs.command_job import REUSE_KEY
from emulator.domain.jobs.pipeline_steps import REUSED_FLAG, REUSED_RUN
from emulator.domain.jobs.status import JobStatus
from emulator.services import jobs
from emulator.store.repositories import Repository
from emulator.store.tables import Job


@dataclass(frozen=True)
class Ask:
    key: str
    allowed: bool  # False: the component is not deterministic, or the pipeline says force_rerun; the key is kept


def earlier(repo: Repository, child: Job, key: str) -> Job | None:
    """The newest Completed step of the workspace with the same key."""
    return next((job for job in repo.jobs(child.workspace_key) if job.key != child.key
                 and job.status == JobStatus.COMPLETED.value and job.body.get(REUSE_KEY) == key), None)


def settle(repo: Repository, parent: Job, child: Job, ask: Ask, now: datetime) -> None:
    """Keep the new child's key; when allowed and an earlier run has it, the child reuses that run."""
    child.body = {**child.body, REUSE_KEY: ask.key}
    found = earlier(repo, child, ask.key) if ask.allowed else None
    if found is None:
        return
    original = found.body.get("properties", {}).get(REUSED_RUN) or found.name
    moved = {}
    outputs = dict(child.body.get("outputs") or {})
    for name, entry in outputs.items():
        there = artifacts.output_uri(found.name, name, found.body["outputs"].get(name, {}))
        moved[artifacts.output_uri(child.name, name, entry)] = there
        outputs[name] = {**entry, "uri": there}
    own = dict(parent.body.get("outputs") or {})
    for name, entry in own.items():
        if (there := moved.get(artifacts.output_uri(parent.name, name, entry))) is not None:
            own[name] = {**entry, "uri": there}
    parent.body = {**parent.body, "outputs": own}
    child.body = {**child.body, "outputs": outputs,
                  "properties": {**child.body.get("properties", {}), REUSED_FLAG: "true", REUSED_RUN: original}}
    jobs.reused(child, now, f"The outputs of job {original} are reused: its component, inputs and settings are the "
                            "same.")
