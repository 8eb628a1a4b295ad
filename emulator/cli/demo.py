"""`amlemu demo preemption`: a self-contained demo of low-priority preemption in the terminal.

It creates a small low-priority cluster, submits sample_jobs/checkpointing a few times with the azure-ai-ml
SDK, preempts nodes that run a job, and shows a live timeline of the nodes (preparing / idle / running /
preempted / leaving) and of the jobs with their attempts. It ends by itself once every job is done and the
cluster is back to zero nodes, prints a summary with the jobs' results, and deletes the cluster.

What happened (node up, attempt, notice, preemption, requeue, status) is told by the platform's event timeline, as
the Studio's timeline page shows it (demo_events.py); listNodes and the jobs' history, polled, draw the strips, pick
the nodes to preempt and tell when it is over. On a console that is no terminal (a pipe, a log) each line is printed
as it comes, and the final view at the end. `Timeline` (demo_timeline.py) is the pure part; this module drives the
stack.
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
from collections.abc import Callable
from datetime import datetime
from pathlib import Path

import typer
from rich.console import Console

from emulator.cli import rest as rest_api
from emulator.cli import studio
from emulator.cli.demo_events import EventFollower, describe, event_line
from emulator.cli.demo_summary import render_summary, results_agree
from emulator.cli.demo_timeline import STRIP_WIDTH, TERMINAL, JobView, NodeView, Timeline
from emulator.cli.stack import BUNDLE, Stack, apply_client_shim
from emulator.domain import events as kinds
from emulator.errors import EmulatorError

app = typer.Typer(help="Self-contained demos of what amlemu emulates.", no_args_is_help=True)

SAMPLE = BUNDLE / "checkpointing"  # sample_jobs/checkpointing

# The run: each attempt of the sample trains 40 steps of 0.5 s (about 20 s undisturbed); a node is preempted
# once its job has run a few seconds, and the next preemption waits a little, so each can be followed.
STEPS, STEP_SECONDS = 40, 0.5
RUN_BEFORE_PREEMPT = 4.0
PREEMPT_SPACING = 6.0
IDLE_SECONDS = 10
POLL_SECONDS = 0.25
DEADLINE_SECONDS = 300.0


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
        self.follower: EventFollower | None = None
        self.shown = 0  # lines printed so far, when the console is no terminal (a log, not a live view)

    def follow_events(self, client) -> None:
        """From now on, the workspace's events give the demo's lines (before the cluster exists: its first too).
        `client`: the stream's own, as the polling goes on beside it."""
        self.follower = EventFollower.from_now(client, self.workspace_path)

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

    def cost(self) -> dict | None:
        """The cluster's line of the cost meter (what its nodes would have cost in Azure), before it is deleted."""
        response = self.rest.get("/_emulator/cost", params={"workspace": self.workspace_path})
        if response.status_code != 200:
            return None
        lines = [c for r in response.json()["value"] for c in r["computes"] if c["name"] == self.cluster]
        return {**lines[0], "region": response.json()["value"][0]["region"]} if lines else None

    def cleanup(self, console: Console) -> None:
        """Cancel what still runs and delete the cluster; on any exit, so that nothing of the demo stays."""
        if self.follower is not None:
            self.follower.stop()
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

    def take_events(self) -> None:
        """The events that came since the last tick: those of the demo's cluster and jobs become its lines, at the
        moment the platform recorded them."""
        if self.follower is None:
            return
        cluster = f"{self.workspace_path}/computes/{self.cluster}".lower()
        for event in self.follower.drain():
            if event["subject"] != cluster and "/jobs/" not in event["subject"]:
                continue
            data = event.get("data") or {}
            if event["kind"] == kinds.JOB_ATTEMPT and data.get("node"):
                self.timeline.attempt_on(event["subject"].rsplit("/jobs/", 1)[-1], int(data["attempt"]), data["node"])
            line = describe(event, self.timeline.node_label, self.timeline.job_label)
            if line is not None:
                ago = time.time() - datetime.fromisoformat(event["time"].replace("Z", "+00:00")).timestamp()
                self.timeline.note(self.clock() - max(ago, 0.0), line, f"{event['kind']} #{event['id']}")

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
        self.take_events()  # first: a node the snapshot lists was heard of by its events already
        self.poll()
        if not live.console.is_terminal:  # a log: each line once, as it comes (the live view ends it)
            for line in self.timeline.events[self.shown:]:
                live.console.print(event_line(self.timeline.started, line))
            self.shown = len(self.timeline.events)
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
               workspace: str | None = typer.Option(None, help="The workspace (default: AMLEMU_WORKSPACE)."),
               open_studio: bool = typer.Option(False, "--open", help="Follow it in the Studio too: open the "
                                                "cluster's timeline in your browser.")) -> None:
    """Preempt nodes of a low-priority cluster under checkpointing jobs, and watch them resume, live."""
    from rich.live import Live

    stack = Stack.from_env()
    workspace = workspace or stack.workspace
    rest = rest_api.running_client(stack)
    rest_api.answer(rest.get(f"/subscriptions/{stack.subscription}/resourceGroups/{stack.resource_group}"
                     f"/providers/Microsoft.MachineLearningServices/workspaces/{workspace}"))
    console = Console()
    demo = Demo(stack, rest, _ml_client(stack, workspace), workspace, nodes, jobs, preemptions)
    try:
        demo.follow_events(stack.client())
        with console.status(f"creating low-priority cluster {demo.cluster}"):
            demo.create_cluster()
        if open_studio:
            studio.open_page(stack, f"/timeline?subject={demo.cluster}", workspace)
        with Live(demo.timeline.render(demo.title()), console=console, auto_refresh=False) as live:
            done = demo.run(live)
        if not done:
            console.print(f"[red]the demo did not end within {DEADLINE_SECONDS:.0f} s[/]: stopping it here")
        with console.status("downloading the jobs' outputs/result.json"):
            results = demo.results()
        console.print(render_summary(demo.timeline.summary(), results, demo.cost()))
    except KeyboardInterrupt:
        console.print("[yellow]interrupted[/]: cleaning up")
        done, results = False, {}
    finally:
        demo.cleanup(console)
    summary = demo.timeline.summary()
    if not done or summary.completed < len(summary.jobs) or not results_agree(results):
        raise typer.Exit(1)
