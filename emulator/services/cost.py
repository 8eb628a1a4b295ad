"""The cost meter of a workspace: its clusters' node-seconds and its compute instances' running seconds (from the
event timeline), its jobs' share of the nodes (from their status history) and its online deployments'
instance-seconds, priced by domain/compute/cost.py; and its budget, whose crossing is recorded once on the
timeline."""

from dataclasses import dataclass, field
from datetime import datetime

from emulator.domain import events as kinds
from emulator.domain.compute import cost
from emulator.domain.jobs import command_job
from emulator.errors import ValidationFailed
from emulator.services import events
from emulator.store.repositories import Repository
from emulator.store.tables import Job, Workspace


@dataclass(frozen=True)
class Line:
    """A compute's or a deployment's cost: `seconds` of VMs (nodes or instances) at `per_hour` each."""
    key: str
    name: str
    kind: str  # "cluster", "instance" (a compute instance) or "deployment"
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
    compute: str  # its cluster's name (a pipeline's or sweep's: its children's, comma separated)
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
    happened = events.all_of(repo, workspace.key,
                             (*events.NODE_KINDS, *events.INSTANCE_KINDS, kinds.DEPLOYMENT_INSTANCES))
    alive = {node.node_id for node in repo.all_nodes()}
    lifetimes = kinds.node_lifetimes(happened, alive)
    sizes = {life.compute: (life.vm_size, life.priority) for life in lifetimes}
    lines = [_vm_line(key, "cluster", *sizes[key], seconds, dollars, region)
             for key, (seconds, dollars) in cost.node_costs(lifetimes, region, now).items()]
    spells = kinds.instance_lifetimes(happened, {row.key for row in repo.computes(workspace.key)})
    own = {life.compute: life.vm_size for life in spells}
    lines += [_vm_line(key, "instance", own[key], "Dedicated", seconds, dollars, region)
              for key, (seconds, dollars) in cost.node_costs(spells, region, now).items()]
    for key, series in kinds.instance_counts(happened).items():
        seconds, dollars = cost.deployment_cost(series, region, now)
        size = series[-1][2]
        name = "/".join(key.split("/")[-3::2])  # endpoint/deployment
        lines.append(Line(key, name, "deployment", size, "Dedicated", seconds, dollars,
                          cost.rate(size, "Dedicated", region).per_hour, dollars,
                          cost.rate(size, "LowPriority", region).dollars(seconds)))
    jobs = [line for job in repo.jobs(workspace.key) if job.driver is None and job.compute_key in sizes
            and (line := _job_line(job, *sizes[job.compute_key], region, now))]
    return Report(workspace.name, workspace.key, region, sorted(lines, key=lambda line: line.key), jobs,
                  workspace.budget)


def _vm_line(key: str, kind: str, size: str, priority: str, seconds: float, dollars: float, region: str) -> Line:
    return Line(key, key.rsplit("/", 1)[-1], kind, size, priority, seconds, dollars,
                cost.rate(size, priority, region).per_hour, cost.rate(size, "Dedicated", region).dollars(seconds),
                cost.rate(size, "LowPriority", region).dollars(seconds))


def _job_line(job: Job, size: str, priority: str, region: str, now: datetime) -> JobLine | None:
    """The node-seconds a job held on its cluster, priced; None if it held none. A compute instance's jobs are not
    priced by the node: the instance is billed whether they run or not."""
    held = cost.busy_seconds(job.history, now) * command_job.instance_count(job.body)
    if not held:
        return None
    return JobLine(job.key, job.name, job.compute_key.rsplit("/", 1)[-1], held,
                   cost.rate(size, priority, region).dollars(held))


def job_cost(repo: Repository, workspace: Workspace, job: Job, now: datetime) -> JobLine | None:
    """What one job's nodes cost, in the workspace's region: a pipeline's or a sweep's is its children's, all the way
    down. None: it held no cluster's node (yet)."""
    region = region_for(workspace, None)
    lines = []
    for row in _runs(repo, job):
        compute = repo.compute(row.compute_key)
        if compute is None or compute.compute_type != "AmlCompute":
            continue
        props = compute.body.get("properties", {}).get("properties", {})
        line = _job_line(row, props.get("vmSize", ""), props.get("vmPriority") or "Dedicated", region, now)
        lines += [line] if line else []
    if not lines:
        return None
    computes = ", ".join(dict.fromkeys(line.compute for line in lines))
    return JobLine(job.key, job.name, computes, sum(line.seconds for line in lines),
                   sum(line.dollars for line in lines))


def _runs(repo: Repository, job: Job) -> list[Job]:
    """The job if it runs something itself, else the jobs under it that do."""
    if job.driver is None:
        return [job]
    return [run for child in repo.children(job.key) for run in _runs(repo, child)]


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
