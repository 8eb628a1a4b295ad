"""Pipeline and sweep jobs against what they orchestrate (issue 18's benchmark).

Starts a composed stack of its own (bench/run.py's `own_stack`), drives it in-process with the unmodified
azure-ai-ml SDK on one cluster of --nodes nodes, all idle before anything is measured (min = max), and measures:

1. pipeline: a 3-step linear pipeline of trivial steps (each writes a line to its output folder, the next one reads
   it), submitted with force_rerun, against the same three steps submitted as separate command jobs one after
   another by a client that waits for each (the next one reads the previous one's output through
   azureml://jobs/<job>/outputs/out): wall time from just before the first create_or_update to the first
   jobs.get (polled every --poll seconds) that says the last one is Completed, interleaved, medians of --repeat.
   Then the same pipeline once more without force_rerun, whose steps may all be reused.
2. sweep: --trials trials, at most --concurrent at once, each sleeping --trial-seconds and logging a metric with
   MLflow (the curated sklearn environment), against the ideal trials / concurrent × trial-seconds, against the
   same from the trials' own time (the median Running → Completed the stack stored), and against the same trials
   as plain command jobs submitted at once to the same nodes.

Writes pipelines.json and the "Pipelines and sweeps" section of RESULTS.md next to this file (--only runs one half
and keeps the other's last figures), the stack's logs under logs/pipelines/.

    .venv/bin/python -m bench.pipelines [--only pipeline|sweep] [--repeat 3] [--trials 20]   (or: make bench-pipelines)
"""

import argparse
import contextlib
import io
import json
import os
import statistics
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from itertools import pairwise
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # `python bench/pipelines.py` as well as `python -m bench.pipelines`

import docker  # noqa: E402
from rich.console import Console  # noqa: E402

from bench.run import ContainerEvents, create_cluster, db_rows, machine, own_stack, replace_section  # noqa: E402
from emulator.domain.ids import WorkspaceRef  # noqa: E402
from emulator.domain.jobs import artifacts  # noqa: E402
from tests.waiting import wait_until  # noqa: E402  (the project's one sleeper: polls with a deadline)

HERE = Path(__file__).resolve().parent
CLUSTER = "bench-pipes"
STEP_IMAGE = "python:3.11-slim"  # trivial steps: no environment to build
TRIAL_ENVIRONMENT = "azureml:AzureML-sklearn-1.5@latest"  # curated: scikit-learn and MLflow
TRIAL = """import time
began = time.time()
import argparse
import mlflow
parser = argparse.ArgumentParser()
parser.add_argument("--x", type=float)
parser.add_argument("--seconds", type=float)
args = parser.parse_args()
imported = time.time()
time.sleep(args.seconds)  # the trial's work
slept = time.time()
mlflow.log_metric("score", 1.0 - abs(args.x - 0.3))
print("bench-marks", began, imported, slept, time.time())
"""
# One trial's time, between consecutive marks: the stack's stored statuses and the script's own clock (same host).
TRIAL_PHASES = [("Running (stored) → the script's Python is up", "Running", "began"),
                ("import mlflow", "began", "imported"),
                ("the work (sleep)", "imported", "slept"),
                ("mlflow.log_metric (the first call sets up the client and the run)", "slept", "logged"),
                ("the script's end → Finalizing (stored)", "logged", "Finalizing"),
                ("Finalizing → Completed (stored)", "Finalizing", "Completed")]
TERMINAL = {"Completed", "Failed", "Canceled", "NotResponding", "Paused"}
SETTLED = 2.0  # seconds without a container event before each measurement
SECTION = "## Pipelines and sweeps"
console = Console(width=None if sys.stdout.isatty() else 150)


def quiet(call, *args, **kwargs):
    with contextlib.redirect_stderr(io.StringIO()):  # the SDK's upload progress bars, experimental warnings
        return call(*args, **kwargs)


def ended(ml, name: str, poll: float, timeout: float = 600) -> str:
    """Polls jobs.get until the job has ended; its status."""
    status = wait_until(lambda: (s := ml.jobs.get(name).status) in TERMINAL and s, timeout=timeout, interval=poll,
                        message=f"{name} to end")
    return str(getattr(status, "value", status))  # the SDK's JobStatus enum, or a plain string


def history(stack, names: list[str]) -> dict[str, dict[str, float]]:
    return {name: times for name, times, _ in db_rows(stack, f"name in ({','.join('?' * len(names))})", *names)}


def script_marks(stack, name: str) -> dict[str, float]:
    """The trial script's own marks (wall clock), from the `bench-marks` line of its std_log.txt."""
    log = (stack.home / artifacts.directory(WorkspaceRef(stack.subscription, stack.resource_group, stack.workspace),
                                            name) / "user_logs" / "std_log.txt")
    for line in (log.read_text().splitlines() if log.exists() else []):
        if line.startswith("bench-marks "):
            return dict(zip(("began", "imported", "slept", "logged"), map(float, line.split()[1:]), strict=True))
    return {}


def phases(marks: list[dict[str, float]]) -> dict[str, float]:
    """Median seconds of each trial phase over the trials that have both its marks."""
    return {what: statistics.median(m[b] - m[a] for m in marks if a in m and b in m)
            for what, a, b in TRIAL_PHASES if any(a in m and b in m for m in marks)}


def slot_handoffs(marks, concurrent: int) -> list[float]:
    """Seconds from a trial's end (Completed, as stored) to the next trial made in the slot it freed."""
    ends = sorted(m["Completed"] for m in marks if "Completed" in m)
    made = sorted(m["NotStarted"] for m in marks)[concurrent:]
    return [b - a for a, b in zip(ends, made, strict=False)]


# ---------------------------------------------------------------- 1. a linear pipeline against a waiting client

def step_commands():
    from azure.ai.ml import Input, Output, command
    from azure.ai.ml.entities import Environment

    environment = Environment(image=STEP_IMAGE)
    first = command(name="first", command="echo step 1 > ${{outputs.out}}/lines", environment=environment,
                    outputs={"out": Output(type="uri_folder")})
    then = command(name="then", environment=environment, inputs={"previous": Input(type="uri_folder")},
                   command="cat ${{inputs.previous}}/lines > ${{outputs.out}}/lines && echo next >> ${{outputs.out}}/lines",
                   outputs={"out": Output(type="uri_folder")})
    return first, then


def run_pipeline(ml, stack, poll: float, force: bool) -> dict:
    from azure.ai.ml.dsl import pipeline

    first, then = step_commands()

    @pipeline(default_compute=CLUSTER, experiment_name="bench-pipelines")
    def linear():
        step1 = first()
        step2 = then(previous=step1.outputs.out)
        step3 = then(previous=step2.outputs.out)
        return {"out": step3.outputs.out}

    job = linear()
    job.settings.force_rerun = force
    wall0, t0 = time.time(), time.perf_counter()
    name = quiet(ml.jobs.create_or_update, job).name
    status = ended(ml, name, poll)
    seconds = time.perf_counter() - t0
    steps = list(ml.jobs.list(parent_job_name=name))
    marks = history(stack, [name] + [s.name for s in steps])
    steps.sort(key=lambda s: marks.get(s.name, {}).get("NotStarted", 0.0))  # in the order they were made
    return {"name": name, "status": status, "seconds": seconds, "wall0": wall0,
            "steps": [{"name": s.name, "display_name": s.display_name, "status": s.status,
                       "reused": str(s.properties.get("azureml.isreused", "")).lower() == "true",
                       "marks": {k: v - wall0 for k, v in marks.get(s.name, {}).items()}} for s in steps],
            "marks": {k: v - wall0 for k, v in marks.get(name, {}).items()}}


def run_chain(ml, stack, poll: float) -> dict:
    """The same three steps as command jobs: each submitted once the one before it is seen Completed."""
    from azure.ai.ml import Input

    first, then = step_commands()
    names: list[str] = []
    wall0, t0 = time.time(), time.perf_counter()
    for i in range(3):
        job = first() if i == 0 else then(previous=Input(type="uri_folder",
                                                         path=f"azureml://jobs/{names[-1]}/outputs/out"))
        job.compute, job.experiment_name = CLUSTER, "bench-pipelines"
        names.append(quiet(ml.jobs.create_or_update, job).name)
        if (status := ended(ml, names[-1], poll)) != "Completed":
            raise RuntimeError(f"chain job {names[-1]} ended {status}")
    seconds = time.perf_counter() - t0
    marks = history(stack, names)
    return {"seconds": seconds, "steps": [{"name": n, "marks": {k: v - wall0 for k, v in marks[n].items()}}
                                          for n in names]}


def handoffs(steps: list[dict]) -> list[float]:
    """Seconds from each step's Completed (as stored) to the next one's NotStarted."""
    return [b["marks"]["NotStarted"] - a["marks"]["Completed"] for a, b in pairwise(steps)
            if "Completed" in a["marks"] and "NotStarted" in b["marks"]]


def own_times(steps: list[dict]) -> list[float]:
    return [s["marks"]["Completed"] - s["marks"]["Running"] for s in steps
            if "Running" in s["marks"] and "Completed" in s["marks"]]


# Where a linear run's time goes, between consecutive marks (seconds after the submit; "seen": the client's jobs.get).
TIMELINE = [("submit → the first step's job stored (NotStarted)", "submit", "first_stored"),
            ("a step's job stored → Running", "stored", "running"),
            ("a step Running → Completed (its command, its end)", "running", "completed"),
            ("a step Completed → the next step's job stored", "completed", "next_stored"),
            ("the last step Completed → the run seen Completed by the client", "last_completed", "seen")]


def timeline(run: dict) -> dict[str, float]:
    """Medians over a run's steps of each TIMELINE phase (a pipeline's or a chain's)."""
    steps = [s["marks"] for s in run["steps"]]
    spans = {"submit": [steps[0]["NotStarted"]], "stored": [m["Running"] - m["NotStarted"] for m in steps],
             "running": [m["Completed"] - m["Running"] for m in steps],
             "completed": handoffs(run["steps"]), "last_completed": [run["seconds"] - steps[-1]["Completed"]]}
    return {what: statistics.median(spans[a]) for what, a, _b in TIMELINE}


def pipeline_half(ml, stack, events, args) -> dict:
    console.print("[bold]pipeline[/]: warm-up (registers the anonymous components and environment; not counted)")
    warm = {"pipeline": run_pipeline(ml, stack, args.poll, force=True), "chain": run_chain(ml, stack, args.poll)}
    if warm["pipeline"]["status"] != "Completed":
        raise RuntimeError(f"warm-up pipeline {warm['pipeline']['name']} ended {warm['pipeline']['status']}")
    pipelines, chains = [], []
    for i in range(args.repeat):  # interleaved, so that drift on a shared machine hits both alike
        wait_until(lambda: events.quiet_for() >= SETTLED, timeout=60, interval=0.1, message="the stack to settle")
        chains.append(run_chain(ml, stack, args.poll))
        wait_until(lambda: events.quiet_for() >= SETTLED, timeout=60, interval=0.1, message="the stack to settle")
        pipelines.append(run_pipeline(ml, stack, args.poll, force=True))
        if pipelines[-1]["status"] != "Completed":
            raise RuntimeError(f"pipeline {pipelines[-1]['name']} ended {pipelines[-1]['status']}")
        console.print(f"  {i + 1}/{args.repeat}: pipeline {pipelines[-1]['seconds']:.2f} s, "
                      f"3 jobs one after another {chains[-1]['seconds']:.2f} s")
    wait_until(lambda: events.quiet_for() >= SETTLED, timeout=60, interval=0.1, message="the stack to settle")
    reused = run_pipeline(ml, stack, args.poll, force=False)
    console.print(f"  submitted again without force_rerun: {reused['seconds']:.2f} s, "
                  f"{sum(s['reused'] for s in reused['steps'])} of {len(reused['steps'])} steps reused")
    median = statistics.median
    return {"repeat": args.repeat, "poll": args.poll, "nodes": args.nodes,
            "pipeline": median(p["seconds"] for p in pipelines), "chain": median(c["seconds"] for c in chains),
            "pipeline_handoff": median(h for p in pipelines for h in handoffs(p["steps"])),
            "chain_handoff": median(h for c in chains for h in handoffs(c["steps"])),
            "pipeline_step_own": median(t for p in pipelines for t in own_times(p["steps"])),
            "chain_step_own": median(t for c in chains for t in own_times(c["steps"])),
            "pipeline_first_step_queued": median(p["steps"][0]["marks"].get("NotStarted", float("nan"))
                                                 for p in pipelines),
            "pipeline_last_to_parent": median(p["marks"]["Completed"] - p["steps"][-1]["marks"]["Completed"]
                                              for p in pipelines),
            "timeline": {"pipeline": {w: median(timeline(p)[w] for p in pipelines) for w, _a, _b in TIMELINE},
                         "chain": {w: median(timeline(c)[w] for c in chains) for w, _a, _b in TIMELINE}},
            "reused": {"seconds": reused["seconds"], "status": reused["status"],
                       "steps_reused": sum(s["reused"] for s in reused["steps"]), "steps": len(reused["steps"])},
            "runs": {"pipelines": pipelines, "chains": chains, "warmup": warm, "reused": reused}}


# ---------------------------------------------------------------- 2. a sweep against its ideal

def sweep_half(ml, stack, events, args, code: Path) -> dict:
    from azure.ai.ml import command
    from azure.ai.ml.sweep import Uniform

    base = command(code=code, environment=TRIAL_ENVIRONMENT, compute=CLUSTER, experiment_name="bench-sweeps",
                   command=f"python trial.py --x ${{{{inputs.x}}}} --seconds {args.trial_seconds}", inputs={"x": 0.5})
    console.print(f"[bold]sweep[/]: warm-up job on {TRIAL_ENVIRONMENT} (its image is built once; not counted)")
    warm = quiet(ml.jobs.create_or_update, base).name
    if (status := ended(ml, warm, 1.0, timeout=1800)) != "Completed":
        raise RuntimeError(f"warm-up trial {warm} ended {status}")

    sweep = base(x=Uniform(0.0, 1.0)).sweep(primary_metric="score", goal="Maximize", sampling_algorithm="random",
                                            compute=CLUSTER)
    sweep.set_limits(max_total_trials=args.trials, max_concurrent_trials=args.concurrent, timeout=1800)
    sweep.experiment_name = "bench-sweeps"
    wait_until(lambda: events.quiet_for() >= SETTLED, timeout=60, interval=0.1, message="the stack to settle")
    wall0, t0 = time.time(), time.perf_counter()
    name = quiet(ml.jobs.create_or_update, sweep).name
    status = ended(ml, name, args.poll)
    seconds = time.perf_counter() - t0
    trials = [t.name for t in ml.jobs.list(parent_job_name=name)]
    marks = history(stack, [name] + trials)
    kept = {t: {k: v - wall0 for k, v in {**marks[t], **script_marks(stack, t)}.items()} for t in trials}
    own = [m["Completed"] - m["Running"] for m in kept.values() if "Running" in m and "Completed" in m]
    console.print(f"  sweep {name}: {status} in {seconds:.2f} s, {len(trials)} trials")

    # The same trials as plain command jobs, all submitted at once (4 threads) to the same nodes.
    wait_until(lambda: events.quiet_for() >= SETTLED, timeout=60, interval=0.1, message="the stack to settle")
    xs = [i / args.trials for i in range(args.trials)]
    t1 = time.perf_counter()
    with ThreadPoolExecutor(args.concurrent) as pool:
        plain = list(pool.map(lambda x: quiet(ml.jobs.create_or_update, base(x=x)).name, xs))
    plain_status = [ended(ml, n, args.poll) for n in plain]
    plain_seconds = time.perf_counter() - t1
    plain_marks = {n: {**m, **script_marks(stack, n)} for n, m in history(stack, plain).items()}
    plain_own = [m["Completed"] - m["Running"] for m in plain_marks.values() if "Running" in m and "Completed" in m]
    console.print(f"  the same {len(plain)} trials as command jobs: {plain_seconds:.2f} s")
    return {"trials": args.trials, "concurrent": args.concurrent, "trial_seconds": args.trial_seconds,
            "nodes": args.nodes, "poll": args.poll, "name": name, "status": status, "seconds": seconds,
            "trials_made": len(trials), "trials_completed": sum(m.get("Completed") is not None for m in kept.values()),
            "ideal": args.trials / args.concurrent * args.trial_seconds, "trial_own": statistics.median(own),
            "most_at_once": most_at_once(kept.values()), "first_trial_running": min(m.get("Running", 1e9)
                                                                                    for m in kept.values()),
            "best": ml.jobs.get(name).properties.get("best_child_run_id"),
            "trial_phases": phases(list(kept.values())), "slot_handoff": statistics.median(
                slot_handoffs(kept.values(), args.concurrent)),
            "plain": {"seconds": plain_seconds, "completed": plain_status.count("Completed"),
                      "trial_own": statistics.median(plain_own), "trial_phases": phases(list(plain_marks.values())),
                      "most_at_once": most_at_once(plain_marks.values())},
            "marks": {"sweep": {k: v - wall0 for k, v in marks[name].items()}, "trials": kept}}


def most_at_once(marks) -> int:
    """The most jobs Running at the same moment, as stored: from Running to Finalizing (their command ended)."""
    edges = sorted(e for m in marks if "Running" in m for e in
                   ((m["Running"], 1), (min(m.get(s, 1e12) for s in ("Finalizing", *TERMINAL)), -1)))
    at, most = 0, 0
    for _, step in edges:
        at += step
        most = max(most, at)
    return most


# ---------------------------------------------------------------- the report

def rows(report: dict) -> list[tuple[str, str, str, str]]:
    out = []
    if p := report.get("pipeline"):
        out += [(f"3-step linear pipeline (force_rerun), submit → Completed seen ({p['repeat']} runs, median)",
                 f"{p['pipeline']:.2f} s", f"{p['chain']:.2f} s (the 3 steps as command jobs, each submitted once "
                 "the previous one is seen Completed)", f"{p['pipeline'] / p['chain']:.2f}×"),
                ("a step's Completed → the next step's NotStarted (as stored; median)",
                 f"{p['pipeline_handoff']:.2f} s", f"{p['chain_handoff']:.2f} s (the client sees it, submits the next)",
                 ""),
                ("the same pipeline again, no force_rerun", f"{p['reused']['seconds']:.2f} s",
                 f"{p['reused']['steps_reused']} of {p['reused']['steps']} steps reused", "")]
    if s := report.get("sweep"):
        out += [(f"{s['trials']}-trial sweep, {s['concurrent']} at a time, {s['trial_seconds']:g} s each, "
                 "submit → Completed seen", f"{s['seconds']:.2f} s",
                 f"{s['ideal']:.2f} s ideal ({s['trials']} / {s['concurrent']} × {s['trial_seconds']:g} s)",
                 f"{s['seconds'] / s['ideal']:.2f}×"),
                ("the same, against the trials' own time", f"{s['seconds']:.2f} s",
                 f"{s['trials'] / s['concurrent'] * s['trial_own']:.2f} s ({s['trials']} / {s['concurrent']} × "
                 f"{s['trial_own']:.2f} s, a trial's median Running → Completed)",
                 f"{s['seconds'] / (s['trials'] / s['concurrent'] * s['trial_own']):.2f}×"),
                ("the same trials as plain command jobs, submitted at once", f"{s['seconds']:.2f} s (the sweep)",
                 f"{s['plain']['seconds']:.2f} s (the jobs)", f"{s['seconds'] / s['plain']['seconds']:.2f}×")]
    return out


def notes(report: dict) -> list[str]:
    out = []
    if p := report.get("pipeline"):
        m = p["machine"]
        out.append(
            f"Pipeline: three `command` steps on `{STEP_IMAGE}` (step 1 writes a line to its `uri_folder` output, steps 2 "
            f"and 3 copy their input to their output and add a line), on a cluster of {p['nodes']} idle nodes (min = max), "
            f"the stack settled (no container event for {SETTLED:g} s) before each run; the pipeline and the chain "
            f"alternate, {p['repeat']} runs each, after one of each not counted (it registers the anonymous components "
            f"and environment). Wall time from just before `create_or_update` to the first `jobs.get` (every "
            f"{p['poll'] * 1000:.0f} ms) that says Completed. A step's own run (Running → Completed as stored) took "
            f"{p['pipeline_step_own']:.2f} s in the pipeline and {p['chain_step_own']:.2f} s as a command job (medians); "
            f"the pipeline's first step was stored {p['pipeline_first_step_queued']:.2f} s after the submit, and the "
            f"pipeline Completed {p['pipeline_last_to_parent']:.2f} s after its last step. The same pipeline submitted "
            f"once more without force_rerun ended {p['reused']['status']}. {m['cpus']} × {m['cpu']}, Docker "
            f"{m['docker']}, azure-ai-ml {m['azure_ai_ml']}; {m['date']}; load average {p['load'][0]:.2f} before, "
            f"{p['load'][1]:.2f} after.")
    if s := report.get("sweep"):
        m = s["machine"]
        out.append(
            f"Sweep: random sampling of `x` in uniform(0, 1), primary metric `score` logged once with "
            f"`mlflow.log_metric` after a {s['trial_seconds']:g} s sleep, on `{TRIAL_ENVIRONMENT}` (its image built by a "
            f"warm-up job, not counted), on a cluster of {s['nodes']} idle nodes (min = max). {s['trials_completed']} of "
            f"{s['trials_made']} trials completed, the sweep {s['status']}; at most {s['most_at_once']} trials were "
            f"Running at once (as stored); the first trial was Running {s['first_trial_running']:.2f} s after the "
            f"submit; a trial's end (Completed) → the next trial made in the slot it freed: {s['slot_handoff']:.2f} s "
            f"(median, as stored). A trial's own time (Running → Completed: its container's Python start, importing MLflow, the "
            f"sleep, the metric's call, the end) was {s['trial_own']:.2f} s (median). The same trials as command jobs "
            f"(x = 0, 1/{s['trials']}, ..., submitted from {s['concurrent']} threads at once; jobs sent ahead start their "
            f"containers while the nodes are busy): {s['plain']['completed']} completed, at most "
            f"{s['plain']['most_at_once']} at once, {s['plain']['trial_own']:.2f} s each (median). "
            f"{m['cpus']} × {m['cpu']}, Docker {m['docker']}, azure-ai-ml {m['azure_ai_ml']}; {m['date']}; load "
            f"average {s['load'][0]:.2f} before, {s['load'][1]:.2f} after.")
    return out


def write_markdown(report: dict, path: Path) -> None:
    lines = [SECTION, "", "`make bench-pipelines` (`bench/pipelines.py`): the real azure-ai-ml SDK against a stack "
             "of its own; figures in `bench/pipelines.json`.", "",
             "| measurement | amlemu | baseline | ratio |", "| --- | --- | --- | --- |"]
    lines += [f"| {' | '.join(row)} |" for row in rows(report)]
    for note in notes(report):
        lines += ["", note]
    if p := report.get("pipeline"):
        lines += ["", "**a linear run's time, phase by phase (medians over the steps, then over the runs)**", "",
                  "| phase | the pipeline | the 3 command jobs, one after another |", "| --- | --- | --- |"]
        lines += [f"| {what} | {p['timeline']['pipeline'][what]:.2f} s | {p['timeline']['chain'][what]:.2f} s |"
                  for what, _a, _b in TIMELINE]
    if s := report.get("sweep"):
        lines += ["", "**one trial's time, phase by phase (medians; the script's marks are its own clock, on the same "
                  "host)**", "", "| phase | a sweep's trial | the same as a command job |", "| --- | --- | --- |"]
        lines += [f"| {what} | {s['trial_phases'].get(what, float('nan')):.2f} s | "
                  f"{s['plain']['trial_phases'].get(what, float('nan')):.2f} s |" for what, _a, _b in TRIAL_PHASES]
    replace_section(path, SECTION, lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", choices=("pipeline", "sweep"), help="run one half, keep the other's last figures")
    parser.add_argument("--repeat", type=int, default=3, help="pipeline and chain runs each (median)")
    parser.add_argument("--nodes", type=int, default=4, help="the cluster's nodes, all idle (min = max)")
    parser.add_argument("--trials", type=int, default=20)
    parser.add_argument("--concurrent", type=int, default=4, help="the sweep's max_concurrent_trials")
    parser.add_argument("--trial-seconds", type=float, default=2.0, help="each trial's sleep")
    parser.add_argument("--poll", type=float, default=0.1, help="seconds between jobs.get while waiting for an end")
    parser.add_argument("--out", type=Path, default=HERE, help="where pipelines.json and RESULTS.md go")
    args = parser.parse_args()
    halves = [args.only] if args.only else ["pipeline", "sweep"]
    saved = args.out / "pipelines.json"
    report = json.loads(saved.read_text()) if saved.exists() else {}
    load = [os.getloadavg()[0]]
    with own_stack(HERE / "logs" / "pipelines") as stack, tempfile.TemporaryDirectory() as code:
        from azure.ai.ml import MLClient  # after the amlemu env variables are set
        from azure.identity import DefaultAzureCredential

        (Path(code) / "trial.py").write_text(TRIAL)
        ml = MLClient(DefaultAzureCredential(), stack.subscription, stack.resource_group, stack.workspace)
        events = ContainerEvents(docker.from_env(), stack.label)
        console.print(f"stack {stack.label} on port {stack.port}; cluster {CLUSTER}: {args.nodes} idle nodes")
        create_cluster(ml, CLUSTER, args.nodes, args.nodes)
        fresh = {}
        for half in halves:
            started = os.getloadavg()[0] if fresh else load[0]
            fresh[half] = (pipeline_half(ml, stack, events, args) if half == "pipeline"
                           else sweep_half(ml, stack, events, args, Path(code)))
            fresh[half].update(load=[started, os.getloadavg()[0]], machine=machine())
        events.close()
    report.update(fresh)
    args.out.mkdir(parents=True, exist_ok=True)
    saved.write_text(json.dumps(report, indent=2) + "\n")
    write_markdown(report, args.out / "RESULTS.md")
    for row in rows(report):
        console.print(" | ".join(row))
    for note in notes(report):
        console.print(note)


if __name__ == "__main__":
    main()
