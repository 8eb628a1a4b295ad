"""`amlemu demo preemption`: a self-contained demo of low-priority preemption in the terminal.

It creates a small low-priority cluster, submits sample_jobs/checkpointing a few times with the azure-ai-ml
SDK, preempts nodes that run a job, and shows a live timeline of the nodes (preparing / idle / running /
preempted / leaving) and of the jobs with their attempts. It ends by itself once every job is done and the
cluster is back to zero nodes, prints a summary with the jobs' results, and deletes the cluster.

`Timeline` is the pure part: fed snapshots with a timestamp, it keeps each node's and job's states over
time and renders them; the rest drives the stack.
"""

import contextlib
import io
import json
import logging
import os
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

import typer
from rich.console import Console, Group, RenderableType
from rich.table import Table
from rich.text import Text

from emulator.cli.stack import ROOT, Stack, apply_client_shim
from emulator.errors import EmulatorError

app = typer.Typer(help="Self-contained demos of what amlemu emulates.", no_args_is_help=True)

SAMPLE = ROOT / "sample_jobs" / "checkpointing"
TERMINAL = frozenset({"Completed", "Failed", "Canceled"})
NODE_COLOURS = {"preparing": "yellow", "idle": "grey50", "running": "green", "preempted": "red",
                "leaving": "magenta", "unusable": "dark_red"}
JOB_COLOURS = {"NotStarted": "grey50", "Starting": "grey50", "Preparing": "yellow", "Queued": "yellow",
               "Running": "green", "Finalizing": "cyan", "CancelRequested": "grey50", "Completed": "blue",
               "Failed": "red", "Canceled": "grey50"}
SECONDS_PER_CELL = (0.5, 1.0, 2.0, 3.0, 5.0, 10.0, 15.0, 30.0, 60.0)
STRIP_WIDTH = 60
EVENTS_SHOWN = 7

# The run: each attempt of the sample trains 40 steps of 0.5 s (about 20 s undisturbed); a node is preempted
# once its job has run a few seconds, and the next preemption waits a little, so each can be followed.
STEPS, STEP_SECONDS = 40, 0.5
RUN_BEFORE_PREEMPT = 4.0
PREEMPT_SPACING = 6.0
IDLE_SECONDS = 10
POLL_SECONDS = 0.25
DEADLINE_SECONDS = 300.0


# ---------------------------------------------------------------- the model: snapshots in, timeline out


@dataclass(frozen=True)
class NodeView:
    """A node as listNodes shows it."""
    node_id: str
    state: str
    run_id: str | None = None


@dataclass(frozen=True)
class JobView:
    """A job's status and attempt, as its history shows them."""
    name: str
    status: str
    attempt: int = 0  # 0 until first dispatched; a preempted job goes back to the queue as its next attempt


@dataclass
class Segment:
    state: str
    start: float
    end: float | None = None  # None: still in that state


@dataclass
class Track:
    """One thing's state over time: segments end to end, the last one open while the thing is there; marks are
    characters drawn over the strip at a moment (a job's attempt number where that attempt began)."""
    segments: list[Segment] = field(default_factory=list)
    marks: list[tuple[float, str]] = field(default_factory=list)

    @property
    def state(self) -> str | None:
        return self.segments[-1].state if self.segments and self.segments[-1].end is None else None

    @property
    def since(self) -> float | None:
        return self.segments[-1].start if self.state is not None else None

    def set(self, t: float, state: str) -> bool:
        """Enter `state` at `t`; False when it was already in it."""
        if self.state == state:
            return False
        self.close(t)
        self.segments.append(Segment(state, t))
        return True

    def close(self, t: float) -> None:
        if self.state is not None:
            self.segments[-1].end = t

    def state_in(self, start: float, end: float, now: float, prefer: frozenset[str] = frozenset()) -> str | None:
        """The state that filled most of [start, end), or a `prefer`red one present at all (so that a short
        preemption is never drawn over)."""
        overlaps: dict[str, float] = {}
        for segment in self.segments:
            overlap = min(end, now if segment.end is None else segment.end) - max(start, segment.start)
            if overlap > 0:
                overlaps[segment.state] = overlaps.get(segment.state, 0.0) + overlap
        preferred = [s for s in overlaps if s in prefer]
        if preferred:
            return preferred[0]
        return max(overlaps, key=overlaps.get) if overlaps else None

    def mark_in(self, start: float, end: float) -> str | None:
        return next((mark for t, mark in self.marks if start <= t < end), None)


@dataclass
class NodeRecord:
    node_id: str
    label: str
    track: Track = field(default_factory=Track)
    run_id: str | None = None  # the job it runs now, or ran last
    requested_at: float | None = None  # when the demo asked for its preemption
    preempted_at: float | None = None
    gone_at: float | None = None


@dataclass
class JobRecord:
    name: str
    label: str
    status: str = "NotStarted"
    attempt: int = 0
    node: str | None = None  # the label of the node running it now
    nodes: dict[int, str] = field(default_factory=dict)  # attempt -> label of the node it ran on
    preemptions: int = 0  # preemptions of the node while it ran this job
    track: Track = field(default_factory=Track)


@dataclass(frozen=True)
class JobSummary:
    label: str
    name: str
    status: str
    attempts: int
    nodes: tuple[str, ...]


@dataclass(frozen=True)
class Summary:
    wall_seconds: float
    jobs: tuple[JobSummary, ...]
    preemptions: int  # nodes seen preempted
    requested: int  # preemptions the demo asked for
    takeover_seconds: tuple[float, ...]  # for each asked: from the request to the node shown preempted
    nodes_used: int

    @property
    def completed(self) -> int:
        return sum(job.status == "Completed" for job in self.jobs)

    @property
    def attempts(self) -> int:
        return sum(job.attempts for job in self.jobs)


class Timeline:
    """Nodes and jobs over time, from the snapshots `observe` is given; times are seconds on any clock."""

    def __init__(self, started: float):
        self.started = started
        self.now = started
        self.nodes: dict[str, NodeRecord] = {}
        self.jobs: dict[str, JobRecord] = {}
        self.events: list[tuple[float, str]] = []

    # ---- feeding

    def add_job(self, t: float, name: str) -> JobRecord:
        """A job the demo submitted; jobs are shown in the order they were added."""
        if name not in self.jobs:
            self.jobs[name] = JobRecord(name, f"#{len(self.jobs) + 1}")
            self.note(t, f"job #{len(self.jobs)} submitted ({name})")
        return self.jobs[name]

    def note(self, t: float, text: str) -> None:
        self.events.append((t, text))

    def observe(self, t: float, nodes: Iterable[NodeView], jobs: Iterable[JobView]) -> None:
        """One snapshot: every node listNodes shows now (a node missing from it is gone) and the jobs' status."""
        self.now = max(self.now, t)
        nodes = list(nodes)
        for view in nodes:
            self._node(t, view)
        listed = {view.node_id for view in nodes}
        for record in self.nodes.values():
            if record.gone_at is None and record.node_id not in listed:
                record.track.close(t)
                record.gone_at = t
                self.note(t, f"node {record.label} gone")
        for view in jobs:
            self._job(t, view)
        running_on = {view.run_id: self.nodes[view.node_id].label for view in nodes if view.run_id}
        for job in self.jobs.values():
            job.node = running_on.get(job.name)
            if job.node is not None and job.status not in TERMINAL:
                job.nodes.setdefault(job.attempt, job.node)

    def _node(self, t: float, view: NodeView) -> None:
        record = self.nodes.get(view.node_id)
        if record is None or record.gone_at is not None:
            record = self.nodes[view.node_id] = NodeRecord(view.node_id, f"n{len(self.nodes) + 1}")
        if view.run_id:
            record.run_id = view.run_id
        if not record.track.set(t, view.state):
            return
        job = self.jobs.get(record.run_id) if record.run_id else None
        about = f" ({job.label})" if job is not None and view.state in ("running", "preempted") else ""
        self.note(t, f"node {record.label} {view.state}{about}")
        if view.state == "preempted":
            record.preempted_at = t
            if job is not None and job.status not in TERMINAL:
                job.preemptions += 1

    def _job(self, t: float, view: JobView) -> None:
        job = self.add_job(t, view.name)
        rerun = view.attempt > max(job.attempt, 1)  # attempt 0 is before the first dispatch, 1 the first run
        if rerun:
            job.track.marks.append((t, str(view.attempt)[-1]))
        job.status, job.attempt = view.status, view.attempt
        if job.track.set(t, view.status) or rerun:
            attempt = f", attempt {view.attempt}" if view.attempt > 1 else ""
            self.note(t, f"job {job.label} {view.status}{attempt}")

    def preempt_requested(self, t: float, node_id: str) -> None:
        record = self.nodes[node_id]
        record.requested_at = t
        job = self.jobs.get(record.run_id) if record.run_id else None
        self.note(t, f"preempt node {record.label}" + (f" (running {job.label})" if job else ""))

    # ---- questions

    def candidates(self, now: float, min_running: float) -> list[str]:
        """Nodes worth preempting: running a job of ours that has run `min_running` seconds in this attempt and not
        asked to go already; the jobs preempted least first."""
        found = []
        for record in self.nodes.values():
            job = self.jobs.get(record.run_id) if record.run_id else None
            if (record.track.state != "running" or record.requested_at is not None or job is None
                    or job.track.state != "Running" or now - job.track.since < min_running):
                continue
            found.append((job.preemptions, job.label, record.node_id))
        return [node_id for _, _, node_id in sorted(found)]

    def finished(self) -> bool:
        """Every job ended, and no node is in the cluster any more (a preempted one is only listed for a while)."""
        jobs_done = bool(self.jobs) and all(job.status in TERMINAL for job in self.jobs.values())
        return jobs_done and all(r.gone_at is not None or r.track.state == "preempted" for r in self.nodes.values())

    def summary(self) -> Summary:
        jobs = tuple(JobSummary(job.label, job.name, job.status, job.attempt,
                                tuple(job.nodes[a] for a in sorted(job.nodes))) for job in self.jobs.values())
        asked = [r for r in self.nodes.values() if r.requested_at is not None]
        takeovers = tuple(r.preempted_at - r.requested_at for r in asked if r.preempted_at is not None)
        return Summary(self.now - self.started, jobs, sum(r.preempted_at is not None for r in self.nodes.values()),
                       len(asked), takeovers, len(self.nodes))

    # ---- rendering

    def render(self, title: str = "", width: int = STRIP_WIDTH) -> RenderableType:
        elapsed = max(self.now - self.started, 0.0)
        step = next((s for s in SECONDS_PER_CELL if s * width >= elapsed), elapsed / width)
        cells = min(width, int(elapsed / step) + 1)
        scale = f"{elapsed:5.1f} s, one cell = {step:g} s"
        nodes = Table(title="nodes", title_justify="left", expand=False)
        for column in ("node", "state", "job", "timeline  " + scale):
            nodes.add_column(column, no_wrap=True)
        for record in self.nodes.values():
            state = "gone" if record.gone_at is not None else record.track.state
            job = self.jobs.get(record.run_id) if record.run_id and state in ("running", "preempted") else None
            nodes.add_row(record.label, Text(state, style=NODE_COLOURS.get(state, "")), job.label if job else "",
                          self._strip(record.track, step, cells, NODE_COLOURS, frozenset({"preempted"})))
        jobs = Table(title="jobs", title_justify="left", expand=False)
        for column in ("job", "status", "attempt", "node", "timeline  (digit: a new attempt starts)"):
            jobs.add_column(column, no_wrap=True)
        for job in self.jobs.values():
            jobs.add_row(job.label, Text(job.status, style=JOB_COLOURS.get(job.status, "")), str(job.attempt or "-"),
                         job.node or "", self._strip(job.track, step, cells, JOB_COLOURS, frozenset()))
        parts = [Text(title, style="bold")] if title else []
        return Group(*parts, nodes, jobs, _legend(), self._recent_events())

    def _strip(self, track: Track, step: float, cells: int, colours: dict, prefer: frozenset[str]) -> Text:
        strip = Text()
        for i in range(cells):
            start = self.started + i * step
            state = track.state_in(start, start + step, self.now, prefer)
            mark = track.mark_in(start, start + step)
            colour = colours.get(state, "white")
            if state is None:
                strip.append(mark or " ")
            elif mark:
                strip.append(mark, style=f"bold white on {colour}")
            else:
                strip.append("█", style=colour)
        return strip

    def _recent_events(self) -> Text:
        text = Text()
        for t, event in self.events[-EVENTS_SHOWN:]:
            text.append(f"{t - self.started:6.1f} s  ", style="dim")
            text.append(event + "\n")
        return text


def _legend() -> Text:
    legend = Text("nodes: ", style="dim")
    for state in ("preparing", "idle", "running", "preempted", "leaving"):
        legend.append("█", style=NODE_COLOURS[state]).append(f" {state}  ")
    legend.append("\njobs:  ", style="dim")
    for status in ("Queued", "Running", "Finalizing", "Completed", "Failed"):
        legend.append("█", style=JOB_COLOURS[status]).append(f" {status}  ")
    return legend


def render_summary(summary: Summary, results: dict[str, dict | None]) -> RenderableType:
    """The end: what ran where, how often it was preempted, and whether every job got the same result."""
    table = Table(title="summary", title_justify="left")
    for column in ("job", "name", "status", "attempts", "nodes"):
        table.add_column(column, no_wrap=True)
    table.add_column("outputs/result.json")  # wraps in a narrow terminal
    for job in summary.jobs:
        result = results.get(job.name)
        shown = "-" if result is None else " ".join(f"{k}={_short(v)}" for k, v in result.items())
        table.add_row(job.label, job.name, Text(job.status, style=JOB_COLOURS.get(job.status, "")),
                      str(job.attempts), " → ".join(job.nodes), shown)
    takeover = f"; notice to node taken: {_span(summary.takeover_seconds)}" if summary.takeover_seconds else ""
    lines = Text()
    lines.append(f"jobs completed: {summary.completed}/{len(summary.jobs)}\n")
    lines.append(f"preemptions: {summary.preemptions} (asked {summary.requested}{takeover})\n")
    lines.append(f"attempts: {summary.attempts} in all ("
                 + ", ".join(f"{job.label} {job.attempts}" for job in summary.jobs) + ")\n")
    lines.append(f"nodes used: {summary.nodes_used}\n")
    lines.append(f"wall time: {summary.wall_seconds:.1f} s\n")
    lines.append(_results_line(results))
    return Group(table, lines)


def _span(seconds: tuple[float, ...]) -> str:
    fastest, slowest = f"{min(seconds):.1f}", f"{max(seconds):.1f}"
    return f"{fastest} s" if fastest == slowest else f"{fastest}-{slowest} s"


def _short(value) -> str:
    return f"{value:.5g}" if isinstance(value, float) else str(value)


def results_agree(results: dict[str, dict | None]) -> bool:
    """Every job has a result, and they are all the same."""
    values = list(results.values())
    return bool(values) and values[0] is not None and all(v == values[0] for v in values)


def _results_line(results: dict[str, dict | None]) -> Text:
    values = list(results.values())
    missing = sum(v is None for v in values)
    if results_agree(results):
        return Text(f"results: identical across the {len(values)} jobs (outputs/result.json)", style="green")
    if not values or missing:
        return Text(f"results: {missing} of {len(values)} job(s) have no result.json", style="red")
    return Text("results: DIFFER between the jobs (outputs/result.json)", style="red")


# ---------------------------------------------------------------- the driver: the stack, through REST and the SDK


class Demo:
    """One run of the demo against a running stack: `rest` for the ARM and /_emulator routes, `ml` (an MLClient)
    for what a user would do with the SDK."""

    def __init__(self, stack: Stack, rest, ml, workspace: str, nodes: int, jobs: int, preemptions: int,
                 clock: Callable[[], float] = time.monotonic):
        self.rest, self.ml, self.clock = rest, ml, clock
        self.cluster = f"demo-spot-{uuid.uuid4().hex[:4]}"
        self.max_nodes, self.job_count, self.preemptions = nodes, jobs, preemptions
        self.workspace_path = (f"/subscriptions/{stack.subscription}/resourceGroups/{stack.resource_group}"
                               f"/providers/Microsoft.MachineLearningServices/workspaces/{workspace}")
        self.timeline = Timeline(clock())
        self.job_names: list[str] = []
        self.created = False
        self.next_preempt_at = 0.0
        self.pause = threading.Event()  # never set: its wait paces the polling

    # ---- the SDK side

    def create_cluster(self) -> None:
        from azure.ai.ml.entities import AmlCompute

        self.created = True  # from here on, cleanup deletes it, even if the create fails half way
        self.ml.compute.begin_create_or_update(AmlCompute(
            name=self.cluster, size="Standard_DS3_v2", tier="low_priority", min_instances=0,
            max_instances=self.max_nodes, idle_time_before_scale_down=IDLE_SECONDS)).result()
        self.timeline.note(self.clock(), f"cluster {self.cluster} created: low priority, 0..{self.max_nodes} nodes")

    def submit(self, index: int) -> None:
        from azure.ai.ml import load_job

        job = load_job(SAMPLE / "job.yml", params_override=[
            {"compute": f"azureml:{self.cluster}"}, {"inputs.steps": STEPS}, {"inputs.step_seconds": STEP_SECONDS},
            {"display_name": f"checkpointing demo #{index + 1}"}, {"experiment_name": "amlemu-demo-preemption"}])
        name = self.ml.jobs.create_or_update(job).name
        self.job_names.append(name)
        self.timeline.add_job(self.clock(), name)

    def results(self) -> dict[str, dict | None]:
        """Each job's outputs/result.json, downloaded with the SDK."""
        found = {}
        with tempfile.TemporaryDirectory(prefix="amlemu-demo-") as folder:
            for name in self.job_names:
                try:
                    with contextlib.redirect_stdout(io.StringIO()):  # the SDK prints what it downloads
                        self.ml.jobs.download(name, download_path=Path(folder) / name, all=True)
                    found[name] = json.loads((Path(folder) / name / "artifacts" / "outputs" / "result.json")
                                             .read_text())
                except (OSError, ValueError):
                    found[name] = None
        return found

    def cleanup(self, console: Console) -> None:
        """Cancel what still runs and delete the cluster; on any exit, so that nothing of the demo stays."""
        for name in self.job_names:
            if self.timeline.jobs[name].status not in TERMINAL:
                self._quietly(lambda n=name: self.ml.jobs.begin_cancel(n).result(), console, f"cancel {name}")
        if self.created:
            with console.status(f"deleting cluster {self.cluster}"):
                if self._quietly(lambda: self.ml.compute.begin_delete(self.cluster).result(), console,
                                 f"delete cluster {self.cluster}"):
                    console.print(f"deleted cluster {self.cluster}")

    @staticmethod
    def _quietly(action: Callable[[], object], console: Console, what: str) -> bool:
        try:
            action()
            return True
        except Exception as exc:  # noqa: BLE001 - cleanup goes on; say what was left behind
            console.print(f"[red]could not {what}[/]: {exc}")
            return False

    # ---- the REST side

    def poll(self) -> None:
        nodes = self._answer(self.rest.post(f"{self.workspace_path}/computes/{self.cluster}/listNodes"))["nodes"]
        jobs = []
        for name in self.job_names:
            if self.timeline.jobs[name].status in TERMINAL:
                continue  # a job that ended changes no more
            history = self._answer(self.rest.get(f"/_emulator{self.workspace_path}/jobs/{name}/history"))
            jobs.append(JobView(name, history["status"], history["attempt"]))
        self.timeline.observe(self.clock(), [NodeView(n["nodeId"], n["nodeState"], n.get("runId")) for n in nodes],
                              jobs)

    def maybe_preempt(self) -> None:
        now = self.clock()
        if self.preemptions <= sum(r.requested_at is not None for r in self.timeline.nodes.values()):
            return
        candidates = self.timeline.candidates(now, RUN_BEFORE_PREEMPT) if now >= self.next_preempt_at else []
        if not candidates:
            return
        response = self.rest.post(f"/_emulator{self.workspace_path}/computes/{self.cluster}/preempt",
                                  json={"nodeId": candidates[0]})
        if response.status_code == 202:
            self.timeline.preempt_requested(now, candidates[0])
            self.next_preempt_at = now + PREEMPT_SPACING
        else:  # it stopped running in between: another one at the next poll
            self.timeline.note(now, f"preempt refused: {response.text[:80]}")

    @staticmethod
    def _answer(response) -> dict:
        if response.status_code >= 400:
            raise EmulatorError(f"{response.request.url.path}: {response.status_code} {response.text[:200]}")
        return response.json()

    # ---- the whole run

    def title(self) -> str:
        return (f"amlemu demo: {self.job_count} checkpointing job(s) on low-priority cluster {self.cluster} "
                f"(0..{self.max_nodes} nodes), {self.preemptions} preemption(s)")

    def run(self, live, deadline: float = DEADLINE_SECONDS) -> bool:
        """Submit, preempt, and watch until everything is over (True) or the deadline passes (False)."""
        ends_at = self.clock() + deadline
        for index in range(self.job_count):
            self.submit(index)
            self._tick(live)
        while not self.timeline.finished():
            if self.clock() >= ends_at:
                return False
            self.maybe_preempt()
            self.pause.wait(POLL_SECONDS)
            self._tick(live)
        return True

    def _tick(self, live) -> None:
        self.poll()
        # The strips take what the terminal has left after the other columns (about 45 characters).
        width = max(20, min(STRIP_WIDTH, live.console.width - 45))
        live.update(self.timeline.render(self.title(), width), refresh=True)


def _ml_client(stack: Stack, workspace: str):
    """An MLClient on the emulator, set up in this process as `amlemu env` would set up a shell."""
    os.environ.update(stack.env_vars())
    apply_client_shim()
    from azure.ai.ml import MLClient
    from azure.identity import ManagedIdentityCredential

    # The SDK's own logger (set up when it is imported) would print "experimental class" warnings over the view.
    logging.getLogger("azure.ai.ml").setLevel(logging.ERROR)
    return MLClient(ManagedIdentityCredential(), stack.subscription, stack.resource_group, workspace,
                    show_progress=False)


@app.command()
def preemption(nodes: int = typer.Option(2, min=1, max=4, help="The cluster's maximum node count."),
               jobs: int = typer.Option(3, min=1, max=6, help="How many times to submit the checkpointing job."),
               preemptions: int = typer.Option(2, min=0, max=10, help="How many running nodes to preempt."),
               workspace: str | None = typer.Option(None, help="The workspace (default: AMLEMU_WORKSPACE).")) -> None:
    """Preempt nodes of a low-priority cluster under checkpointing jobs, and watch them resume, live."""
    from rich.live import Live

    from emulator.cli.main import _answer, _running_client

    stack = Stack.from_env()
    workspace = workspace or stack.workspace
    rest = _running_client(stack)
    _answer(rest.get(f"/subscriptions/{stack.subscription}/resourceGroups/{stack.resource_group}"
                     f"/providers/Microsoft.MachineLearningServices/workspaces/{workspace}"))
    console = Console()
    demo = Demo(stack, rest, _ml_client(stack, workspace), workspace, nodes, jobs, preemptions)
    try:
        with console.status(f"creating low-priority cluster {demo.cluster}"):
            demo.create_cluster()
        with Live(demo.timeline.render(demo.title()), console=console, auto_refresh=False) as live:
            done = demo.run(live)
        if not done:
            console.print(f"[red]the demo did not end within {DEADLINE_SECONDS:.0f} s[/]: stopping it here")
        with console.status("downloading the jobs' outputs/result.json"):
            results = demo.results()
        console.print(render_summary(demo.timeline.summary(), results))
    except KeyboardInterrupt:
        console.print("[yellow]interrupted[/]: cleaning up")
        done, results = False, {}
    finally:
        demo.cleanup(console)
    summary = demo.timeline.summary()
    if not done or summary.completed < len(summary.jobs) or not results_agree(results):
        raise typer.Exit(1)
