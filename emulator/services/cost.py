"""The cost meter of a workspace: its clusters' node-seconds (from the event timeline), its jobs' share of them
(from their status history) and its online deployments' instance-seconds, priced by domain/compute/cost.py; and
its budget, whose crossing is recorded once on the timeline."""

from dataclasses import dataclass, field
from datetime import datetime

from emulator.domain import events as kinds
from emulator.domain.compute import cost
from emulator.domain.jobs import command_job
from emulator.errors import ValidationFailed
from emulator.services import events
from emulator.store.repositories import Repository
from emulator.store.tables import Workspace


@dataclass(frozen=True)
class Line:
    """A compute's or a deployment's cost: `seconds` of VMs (nodes or instances) at `per_hour` each."""
    key: str
    name: str
    kind: str  # "cluster" or "deployment"
    vm_size: str
    priority: str
    seconds: float
    dollars: float
    per_hour: float
    dedicated_dollars: float  # the same VM-seconds on dedicated VMs
    low_priority_dollars: float  # and on low-priority ones


@dataclass(frozen=True)
class JobLine:
    key: str
    name: str
    compute: str
    seconds: float  # node-seconds it held (Running and Finalizing, every attempt, every node)
    dollars: float


@dataclass(frozen=True)
class Report:
    workspace: str
    workspace_key: str
    region: str
    lines: list[Line] = field(default_factory=list)
    jobs: list[JobLine] = field(default_factory=list)
    budget: dict | None = None

    @property
    def dollars(self) -> float:
        return sum(line.dollars for line in self.lines)


def region_for(workspace: Workspace, region: str | None) -> str:
    """The region asked for, else the workspace's own if the meter prices it, else East US."""
    if region:
        return cost.region_of(region)
    own = workspace.location.lower().replace(" ", "")
    return own if own in cost.REGIONS else cost.DEFAULT_REGION


def report(repo: Repository, workspace: Workspace, region: str | None, now: datetime) -> Report:
    region = region_for(workspace, region)
    happened = events.all_of(repo, workspace.key, (*events.NODE_KINDS, kinds.DEPLOYMENT_INSTANCES))
    alive = {node.node_id for node in repo.all_nodes()}
    lifetimes = kinds.node_lifetimes(happened, alive)
    sizes = {life.compute: (life.vm_size, life.priority) for life in lifetimes}
    lines = []
    for key, (seconds, dollars) in cost.node_costs(lifetimes, region, now).items():
        size, priority = sizes[key]
        lines.append(Line(key, key.rsplit("/", 1)[-1], "cluster", size, priority, seconds, dollars,
                          cost.rate(size, priority, region).per_hour,
                          cost.rate(size, "Dedicated", region).dollars(seconds),
                          cost.rate(size, "LowPriority", region).dollars(seconds)))
    for key, series in kinds.instance_counts(happened).items():
        seconds, dollars = cost.deployment_cost(series, region, now)
        size = series[-1][2]
        name = "/".join(key.split("/")[-3::2])  # endpoint/deployment
        lines.append(Line(key, name, "deployment", size, "Dedicated", seconds, dollars,
                          cost.rate(size, "Dedicated", region).per_hour, dollars,
                          cost.rate(size, "LowPriority", region).dollars(seconds)))
    jobs = []
    for job in repo.jobs(workspace.key):
        if job.driver is not None or job.compute_key not in sizes:
            continue  # a parent runs nothing itself; an instance's jobs are not billed by the node
        held = cost.busy_seconds(job.history, now) * command_job.instance_count(job.body)
        if held:
            jobs.append(JobLine(job.key, job.name, job.compute_key.rsplit("/", 1)[-1], held,
                                cost.rate(*sizes[job.compute_key], region).dollars(held)))
    return Report(workspace.name, workspace.key, region, sorted(lines, key=lambda line: line.key), jobs,
                  workspace.budget)


def set_budget(workspace: Workspace, body: object) -> dict:
    """{"dollars": > 0, "region"?}: a new budget, to be crossed afresh; {"dollars": null} removes it."""
    if not isinstance(body, dict) or "dollars" not in body:
        raise ValidationFailed("The budget needs 'dollars' (a number above 0, or null to remove it).",
                               target="dollars")
    dollars = body["dollars"]
    if dollars is None:
        workspace.budget = None
        return {}
    if isinstance(dollars, bool) or not isinstance(dollars, int | float) or dollars <= 0:
        raise ValidationFailed(f"'dollars' must be a number above 0, got {dollars!r}.", target="dollars")
    region = body.get("region")
    if region is not None and not isinstance(region, str):
        raise ValidationFailed("'region' must be a region name such as eastus.", target="region")
    workspace.budget = {"dollars": float(dollars), "region": region and cost.region_of(region),
                        "exceededAt": None}
    return workspace.budget


def check_budgets(repo: Repository, now: datetime) -> list[str]:
    """Workspaces whose budget was crossed since the last check: each gets its event, once."""
    crossed = []
    for workspace in repo.all_workspaces():
        if not workspace.budget or workspace.budget.get("exceededAt"):
            continue
        spent = report(repo, workspace, workspace.budget.get("region"), now)
        if cost.budget_crossed(workspace.budget, spent.dollars):
            events.record(repo, workspace.key, kinds.BUDGET_EXCEEDED, workspace.key, now,
                          dollars=workspace.budget["dollars"], spent=round(spent.dollars, 6), region=spent.region)
            workspace.budget = {**workspace.budget, "exceededAt": now.isoformat()}
            crossed.append(workspace.name)
    return crossed
