"""The demo's pure part: fed snapshots of nodes and jobs with a timestamp, `Timeline` keeps each one's states over
time and renders them as strips (rich renderables); `render_summary` ends the demo with the jobs' results."""

from collections.abc import Iterable
from dataclasses import dataclass, field

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from emulator.cli.demo_events import event_line

TERMINAL = frozenset({"Completed", "Failed", "Canceled"})
NODE_COLOURS = {"preparing": "yellow", "idle": "grey50", "running": "green", "preempted": "red",
                "leaving": "magenta", "unusable": "dark_red"}
JOB_COLOURS = {"NotStarted": "grey50", "Starting": "grey50", "Preparing": "yellow", "Queued": "yellow",
               "Running": "green", "Finalizing": "cyan", "CancelRequested": "grey50", "Completed": "blue",
               "Failed": "red", "Canceled": "grey50"}
SECONDS_PER_CELL = (0.5, 1.0, 2.0, 3.0, 5.0, 10.0, 15.0, 30.0, 60.0)
STRIP_WIDTH = 60
EVENTS_SHOWN = 7


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
        self.events: list[tuple[float, str, str]] = []  # (time, line, the platform event's kind and id, or "")

    # ---- feeding

    def add_job(self, t: float, name: str) -> JobRecord:
        """A job the demo submitted; jobs are shown in the order they were added."""
        if name not in self.jobs:
            self.jobs[name] = JobRecord(name, f"#{len(self.jobs) + 1}")
            self.note(t, f"job #{len(self.jobs)} submitted ({name})")
        return self.jobs[name]

    def note(self, t: float, text: str, source: str = "") -> None:
        self.events.append((t, text, source))

    def node_label(self, node_id: str) -> str:
        """A node's short name (n1, n2, ...), in the order it was first heard of, by an event or in a snapshot."""
        if node_id not in self.nodes:
            self.nodes[node_id] = NodeRecord(node_id, f"n{len(self.nodes) + 1}")
        return self.nodes[node_id].label

    def attempt_on(self, name: str, attempt: int, node_id: str) -> None:
        """The platform's word (a job.attempt event) for the node an attempt runs on, over what a snapshot showed."""
        job = next((job for job in self.jobs.values() if job.name.lower() == name.lower()), None)
        if job is not None:
            job.nodes[attempt] = self.node_label(node_id)

    def job_label(self, name: str) -> str | None:
        """A job's short name (#1, #2, ...); None for a job the demo did not submit."""
        return next((job.label for job in self.jobs.values() if job.name.lower() == name.lower()), None)

    def observe(self, t: float, nodes: Iterable[NodeView], jobs: Iterable[JobView]) -> None:
        """One snapshot: every node listNodes shows now (a node missing from it is gone) and the jobs' status. It
        draws the strips; the lines of what happened come from the platform's events (demo_events.py)."""
        self.now = max(self.now, t)
        nodes = list(nodes)
        for view in nodes:
            self._node(t, view)
        listed = {view.node_id for view in nodes}
        for record in self.nodes.values():
            if record.gone_at is None and record.node_id not in listed:
                record.track.close(t)
                record.gone_at = t
        for view in jobs:
            self._job(t, view)
        running_on = {view.run_id: self.nodes[view.node_id].label for view in nodes  # a preempted node keeps its runId
                      if view.run_id and view.state == "running"}
        for job in self.jobs.values():
            job.node = running_on.get(job.name)
            if job.node is not None and job.status not in TERMINAL:
                job.nodes.setdefault(job.attempt, job.node)

    def _node(self, t: float, view: NodeView) -> None:
        self.node_label(view.node_id)  # node ids are unique: one that went never comes back
        record = self.nodes[view.node_id]
        if view.run_id:
            record.run_id = view.run_id
        if not record.track.set(t, view.state):
            return
        if view.state == "preempted":
            record.preempted_at = t
            job = self.jobs.get(record.run_id) if record.run_id else None
            if job is not None and job.status not in TERMINAL:
                job.preemptions += 1

    def _job(self, t: float, view: JobView) -> None:
        job = self.add_job(t, view.name)
        rerun = view.attempt > max(job.attempt, 1)  # attempt 0 is before the first dispatch, 1 the first run
        if rerun:
            job.track.marks.append((t, str(view.attempt)[-1]))
        job.status, job.attempt = view.status, view.attempt
        job.track.set(t, view.status)

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
        for line in self.events[-EVENTS_SHOWN:]:
            text.append_text(event_line(self.started, line)).append("\n")
        return text


def _legend() -> Text:
    legend = Text("nodes: ", style="dim")
    for state in ("preparing", "idle", "running", "preempted", "leaving"):
        legend.append("█", style=NODE_COLOURS[state]).append(f" {state}  ")
    legend.append("\njobs:  ", style="dim")
    for status in ("Queued", "Running", "Finalizing", "Completed", "Failed"):
        legend.append("█", style=JOB_COLOURS[status]).append(f" {status}  ")
    return legend
