"""What the Studio pages show, read from the store (and, for a job's metrics, from MLflow): one method per page,
each one transaction. The pages are read-only: nothing here writes."""

import json
import time
from dataclasses import dataclass, field

from emulator import confined
from emulator.domain.compute import kubernetes, local, serverless
from emulator.domain.ids import WorkspaceRef
from emulator.domain.jobs import artifacts
from emulator.domain.serving import traffic
from emulator.domain.storage import datastores
from emulator.errors import EmulatorError, NotFound
from emulator.services import (
    batch_endpoints,
    batch_invoke,
    computes,
    cost,
    endpoints,
    events,
    instances,
    jobs,
    workspaces,
)
from emulator.services.facade.base import Service
from emulator.services.studio_runs import RunData, StudioRuns
from emulator.store.repositories import Repository
from emulator.store.tables import (
    BatchDeployment,
    BatchEndpoint,
    Compute,
    Event,
    Job,
    Node,
    OnlineDeployment,
    OnlineEndpoint,
    Workspace,
)

PAGE_LOG_LINES = 400
TIMELINE_EVENTS = 300  # the newest events a timeline page shows
PROGRESS = "logs/job_progress_overview.txt"  # what the parallel runner writes (emulator/in_job/parallel_run.py)
JOB_FILTERS = ("status", "experiment", "compute", "tag")


@dataclass(frozen=True)
class ComputeCard:
    row: Compute
    nodes: list[Node]
    instance: dict | None  # an instance's state and applications (services/instances.arm_status)


@dataclass(frozen=True)
class TimelineView:
    workspace: Workspace
    events: list[Event]  # newest first
    subject: str | None  # the compute or job they are about; None: the whole workspace
    report: cost.Report  # what the workspace's VMs cost so far


@dataclass(frozen=True)
class JobsList:
    workspace: Workspace
    rows: list[Job]
    choices: dict[str, list[str]]  # filter -> the values there are to pick from


@dataclass(frozen=True)
class JobPage:
    """A job's record, the end of its log, its outputs and files, its children and what MLflow holds of it."""
    workspace: Workspace
    row: Job
    log: str
    outputs: dict[str, str]  # output name -> its URI
    files: dict[str, list[str]]  # "" (its artifacts: outputs/, logs) or a named output -> its files' relative paths
    children: list[Job] = field(default_factory=list)
    graph: dict[str, list[str]] = field(default_factory=dict)  # a pipeline's step -> the steps it reads from
    run: RunData = field(default_factory=RunData)
    trials: dict[str, float | None] = field(default_factory=dict)  # a sweep's child -> its best objective value
    progress: str | None = None  # a parallel (batch) job's mini-batch overview
    spent: cost.JobLine | None = None  # what its nodes (a parent's: its children's) would cost in Azure
    region: str = ""  # whose retail prices price it


@dataclass(frozen=True)
class OnlineCard:
    row: OnlineEndpoint
    deployments: list[OnlineDeployment]
    traffic: dict[str, dict] | None = None  # deployment -> its recent requests, latency, errors; None: no data


@dataclass(frozen=True)
class BatchCard:
    row: BatchEndpoint
    deployments: list[BatchDeployment]
    jobs: list[Job] = field(default_factory=list)
    progress: dict[str, str] = field(default_factory=dict)  # batch job name -> its mini-batch overview


def compute_name(row: Job) -> str:
    name = row.compute_key.rsplit("/", 1)[-1]
    return "serverless" if serverless.is_serverless(name) else "local" if local.is_local_compute(name) else \
        kubernetes.shown_name(name)


def _values(job: Job, what: str) -> list[str]:
    if what == "tag":
        return [f"{k}={v}" for k, v in (job.body.get("tags") or {}).items()]
    return [{"status": job.status, "experiment": job.body.get("experimentName") or "Default",
             "compute": compute_name(job)}[what]]


class Studio(Service):
    def __init__(self, settings, store, secret, clock, runs: StudioRuns):
        super().__init__(settings, store, secret, clock)
        self.runs = runs

    def workspaces(self) -> list[Workspace]:
        with self.store.reading() as repo:
            return repo.all_workspaces()

    def workspace(self, ref: WorkspaceRef) -> Workspace:
        return self._workspace(ref)

    def computes(self, ref: WorkspaceRef, name: str | None = None) -> tuple[Workspace, list[ComputeCard],
                                                                            cost.Report]:
        """Every compute of the workspace, or the one named (NotFound if there is none), and what they cost."""
        with self.in_workspace(ref) as (repo, workspace):
            rows = [computes.get(repo, ref, name)] if name else repo.computes(ref.key)
            cards = [self._card(repo, row) for row in rows if not local.is_hidden(row.name)]
            return workspace, cards, cost.report(repo, workspace, None, self.clock())

    def timeline(self, ref: WorkspaceRef, subject: str | None = None) -> TimelineView:
        """The workspace's newest events, or those of one compute or job (NotFound if it has neither)."""
        with self.in_workspace(ref) as (repo, workspace):
            key = None
            if subject:
                key = next((k for k in (f"{workspace.key}/computes/{subject}".lower(),
                                        f"{workspace.key}/jobs/{subject}".lower()) if repo.compute(k) or repo.job(k)),
                           None)
                if key is None:
                    raise NotFound(f"Workspace {ref.name} has no compute or job named {subject!r}.", target="subject")
            rows = events.after(repo, workspace.key, 0, TIMELINE_EVENTS, subject=key, newest=True)
            return TimelineView(workspace, rows, subject, cost.report(repo, workspace, None, self.clock()))

    @staticmethod
    def _card(repo: Repository, row: Compute) -> ComputeCard:
        if row.compute_type == "ComputeInstance":
            return ComputeCard(row, [], instances.arm_status(row))
        return ComputeCard(row, repo.nodes(row.key), None)

    def jobs(self, ref: WorkspaceRef, chosen: dict[str, str | None]) -> JobsList:
        """The workspace's jobs, newest first, with those of `chosen` (filter -> value) only."""
        with self.in_workspace(ref) as (repo, workspace):
            every = jobs.listed(repo, ref, "ActiveOnly")
        choices = {what: sorted({v for job in every for v in _values(job, what)}) for what in JOB_FILTERS}
        rows = [job for job in every if all(not value or value in _values(job, what) for what, value in chosen.items())]
        return JobsList(workspace, sorted(rows, key=lambda j: j.created_at, reverse=True), choices)

    def job(self, ref: WorkspaceRef, name: str) -> JobPage:
        with self.store.reading() as repo:
            row, workspace = jobs.get(repo, ref, name), workspaces.get(repo, ref)
            children = repo.children(row.key)
            spent = cost.job_cost(repo, workspace, row, self.clock())
        outputs = {output: artifacts.output_uri(row.name, output, entry)
                   for output, entry in row.body.get("outputs", {}).items()}
        log = f"{artifacts.directory(ref, row.name)}/{artifacts.main_log(row.body)}"
        page = JobPage(workspace, row, confined.last_lines(self.settings.data_dir, log, PAGE_LOG_LINES), outputs,
                       {key: found for key, folder in self._folders(ref, row).items()
                        if (found := self.runs.files(folder))}, children,
                       {step: list(up) for step, up in (row.driver or {}).get("graph", {}).items()},
                       self.runs.run_data(row), progress=self._progress(ref, [row, *children]), spent=spent,
                       region=cost.region_for(workspace, None))
        objective = (row.body.get("objective") or {}).get("primaryMetric")
        if row.body.get("jobType") == "Sweep" and objective:
            goal = (row.body.get("objective") or {}).get("goal", "Maximize")
            return JobPage(**{**page.__dict__, "trials": self.runs.best(children, objective, goal)})
        return page

    @staticmethod
    def _folders(ref: WorkspaceRef, row: Job) -> dict[str, str]:
        """Where a job's files are: its artifacts (""), and each named output's folder in its datastore."""
        folders = {"": artifacts.directory(ref, row.name)}
        for output, entry in row.body.get("outputs", {}).items():
            try:
                where = datastores.resolve_uri(ref, artifacts.output_uri(row.name, output, entry), output)
            except EmulatorError:  # an output elsewhere than a datastore of the workspace: nothing to offer here
                continue
            folders[output] = artifacts.blob_dir(where)
        return folders

    def _progress(self, ref: WorkspaceRef, rows: list[Job]) -> str | None:
        for row in rows:
            text = confined.last_lines(self.settings.data_dir, f"{artifacts.directory(ref, row.name)}/{PROGRESS}", 20)
            if text:
                return text
        return None

    def job_file(self, ref: WorkspaceRef, name: str, path: str, output: str = "") -> bytes:
        """One of a job's files (of its artifacts, or of a named output): only a file the page lists, so nothing
        outside those folders and no link."""
        folder = self._folders(ref, self.job_row(ref, name)).get(output)
        if folder is None or path not in self.runs.files(folder):
            raise NotFound(f"Job {name} has no file {path!r}" + (f" in output {output!r}." if output else "."),
                           target="path")
        return confined.source(self.settings.data_dir, f"{folder}/{path}").read_bytes()

    def job_row(self, ref: WorkspaceRef, name: str) -> Job:
        with self.store.reading() as repo:
            return jobs.get(repo, ref, name)

    def endpoints(self, ref: WorkspaceRef) -> tuple[Workspace, list[OnlineCard], list[BatchCard]]:
        with self.in_workspace(ref) as (repo, workspace):
            online = [OnlineCard(e, repo.online_deployments(e.key)) for e in repo.online_endpoints(ref.key)]
            batch = [BatchCard(e, repo.batch_deployments(e.key)) for e in repo.batch_endpoints(ref.key)]
            return workspace, online, batch

    def online_endpoint(self, ref: WorkspaceRef, name: str) -> tuple[Workspace, OnlineCard]:
        with self.in_workspace(ref) as (repo, workspace):
            row = endpoints.get_endpoint(repo, ref, name)
            deployments = repo.online_deployments(row.key)
        return workspace, OnlineCard(row, deployments, traffic.of_endpoint(self._traffic(), row.name, time.time()))  # the router's wall clock

    def _traffic(self) -> dict | None:
        """What the scoring router last wrote of its traffic (scoring/traffic.py); None if nothing (yet)."""
        try:
            return json.loads(self.settings.scoring_traffic.read_text())
        except (OSError, ValueError):
            return None

    def batch_endpoint(self, ref: WorkspaceRef, name: str) -> tuple[Workspace, BatchCard]:
        with self.in_workspace(ref) as (repo, workspace):
            row = batch_endpoints.get_endpoint(repo, ref, name)
            listed = batch_invoke.listed(repo, ref, name, None)
            kids = {job.name: repo.children(job.key) for job in listed}
            card = BatchCard(row, repo.batch_deployments(row.key), listed)
        progress = {job.name: text for job in listed if (text := self._progress(ref, [job, *kids[job.name]]))}
        return workspace, BatchCard(card.row, card.deployments, card.jobs, progress)
