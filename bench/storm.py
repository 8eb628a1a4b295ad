"""A preemption storm at real speed, against the same jobs undisturbed (issue point 6's benchmark).

The same scenario runs twice, each time on a composed stack of its own (bench/run.py's `own_stack`), driven with
the unmodified azure-ai-ml SDK: a low-priority cluster of at most --nodes nodes, --jobs submissions of
sample_jobs/checkpointing (--steps steps of --step-seconds each; it checkpoints every 5 steps, and on a preemption
notice saves, acknowledges and exits so that the next attempt resumes). First undisturbed, then with random
preemption on the cluster (a mean of --mean seconds between preemptions, a fixed --seed, through the emulator's
`PUT /_emulator/<compute ARM id>/preemption`). Each run is measured from just before the first submission to the
last `Completed` the stack stored; it reports jobs completed, nodes preempted, preemptions that hit a running job,
attempts in all, and checks every job's outputs/result.json against the undisturbed value, written once.

Each run is a child process of its own: the SDK caches the emulator's cloud endpoints (its port) per process.
Writes storm.json and a "Preemption storm" section of RESULTS.md next to this file, the stacks' logs under
logs/storm-*/.

    .venv/bin/python -m bench.storm [--jobs 30] [--nodes 3] [--mean 10] [--seed 42]   (or: make bench-storm)
"""

import argparse
import contextlib
import io
import json
import os
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # `python bench/storm.py` as well as `python -m bench.storm`

from rich.console import Console  # noqa: E402

from bench.run import machine, own_stack, replace_section, show  # noqa: E402
from emulator.domain.ids import WorkspaceRef  # noqa: E402
from emulator.domain.jobs import artifacts  # noqa: E402
from emulator.runtime.docker import DockerRuntime  # noqa: E402
from tests.samples import checkpointing_result  # noqa: E402
from tests.waiting import wait_until  # noqa: E402  (the project's one sleeper: polls with a deadline)

HERE = Path(__file__).resolve().parent
SAMPLE = ROOT / "sample_jobs" / "checkpointing"
CLUSTER = "storm"
TERMINAL = {"Completed", "Failed", "Canceled", "NotResponding", "Paused"}
SCENARIOS = ("undisturbed", "storm")
SECTION = "## Preemption storm"
console = Console(width=None if sys.stdout.isatty() else 150)


# ---------------------------------------------------------------- one scenario, in a child process

class Watch:
    """Polls the stack's REST api: nodes seen (and preempted) in listNodes, the jobs' statuses."""

    def __init__(self, rest, workspace_path: str, names: list[str]):
        self.rest, self.ws, self.names = rest, workspace_path, names
        self.preempted: set[str] = set()
        self.nodes_seen: set[str] = set()
        self.peak_nodes = 0
        self.statuses: dict[str, str] = {}

    def _get(self, response) -> dict:
        if response.status_code >= 400:
            raise RuntimeError(f"{response.request.url.path}: {response.status_code} {response.text[:300]}")
        return response.json()

    def poll(self) -> bool:
        nodes = self._get(self.rest.post(f"{self.ws}/computes/{CLUSTER}/listNodes"))["nodes"]
        self.nodes_seen |= {n["nodeId"] for n in nodes}
        self.preempted |= {n["nodeId"] for n in nodes if n["nodeState"] == "preempted"}
        self.peak_nodes = max(self.peak_nodes, sum(n["nodeState"] != "preempted" for n in nodes))
        listed = self._get(self.rest.get(f"{self.ws}/jobs"))["value"]
        self.statuses.update({j["name"]: j["properties"]["status"] for j in listed if j["name"] in self.names})
        return all(self.statuses.get(n) in TERMINAL for n in self.names)

    def history(self, name: str) -> dict:
        return self._get(self.rest.get(f"/_emulator{self.ws}/jobs/{name}/history"))


def submit_all(ml, args: argparse.Namespace, tag: str) -> list[str]:
    from azure.ai.ml import load_job

    names = []
    for i in range(args.jobs):
        job = load_job(SAMPLE / "job.yml", params_override=[
            {"name": f"storm-{tag}-{i:02d}"}, {"compute": f"azureml:{CLUSTER}"}, {"inputs.steps": args.steps},
            {"inputs.step_seconds": args.step_seconds}, {"experiment_name": "bench-storm"}])
        with contextlib.redirect_stderr(io.StringIO()):  # the SDK's upload progress bar
            names.append(ml.jobs.create_or_update(job).name)
    return names


def outcome(stack, watch: Watch, names: list[str], args: argparse.Namespace, wall0: float) -> dict:
    """What each job went through (from the history route) and what it left in outputs/."""
    ref = WorkspaceRef(stack.subscription, stack.resource_group, stack.workspace)
    expected, jobs = checkpointing_result(args.steps), {}
    for name in names:
        history = watch.history(name)
        folder = stack.home / artifacts.directory(ref, name)
        result = folder / "outputs" / "result.json"
        log = folder / "user_logs" / "std_log.txt"
        text = log.read_text() if log.exists() else ""
        completed = [datetime.fromisoformat(h["time"]).timestamp() for h in history["history"]
                     if h["status"] == "Completed"]
        jobs[name] = {"status": history["status"], "attempts": history["attempt"],
                      "preempted": sum(1 for h in history["history"] if h.get("warning")),
                      "completed_after": completed[0] - wall0 if completed else None,
                      "result_ok": result.exists() and json.loads(result.read_text()) == expected,
                      "results_written": text.count("result written to outputs/result.json"),
                      "resumed": text.count("resuming from step")}
    return jobs


def job_containers_left(label: str) -> int:
    """Job containers of the stack still there a minute after the last job ended (none expected)."""
    runtime = DockerRuntime()

    def left() -> list:
        return runtime.list({"amlemu.stack": label, "amlemu.role": "job"})
    try:
        wait_until(lambda: not left(), timeout=60, interval=0.5, message="the job containers to go")
    except AssertionError:
        return len(left())
    return 0


def notices(stack_log: Path) -> dict:
    """From the controller's log: random draws, notices given, acknowledged by the job, nodes taken."""
    text = stack_log.read_text() if stack_log.exists() else ""
    lines = [line for line in text.splitlines() if line.startswith("controller")]
    return {"draws": sum(f"of {CLUSTER}: " in x and "random preemption" in x for x in lines),
            "no_node_to_take": sum("random preemption" in x and "no node to take" in x for x in lines),
            "notices": sum("random preemption" in x and "notice to node" in x for x in lines),
            "acknowledged": sum("acknowledged its preemption notice" in x for x in lines),
            "taken": sum(f"of {CLUSTER} preempted" in x for x in lines)}


def run_scenario(args: argparse.Namespace) -> dict:
    storm = args.scenario == "storm"
    with own_stack(HERE / "logs" / f"storm-{args.scenario}") as stack:
        from azure.ai.ml import MLClient  # after the amlemu env variables are set
        from azure.ai.ml.entities import AmlCompute
        from azure.identity import DefaultAzureCredential

        ml = MLClient(DefaultAzureCredential(), stack.subscription, stack.resource_group, stack.workspace)
        rest = stack.client()
        ws = (f"/subscriptions/{stack.subscription}/resourceGroups/{stack.resource_group}"
              f"/providers/Microsoft.MachineLearningServices/workspaces/{stack.workspace}")
        ml.compute.begin_create_or_update(AmlCompute(name=CLUSTER, size="Standard_DS3_v2", tier="low_priority",
                                                     min_instances=0, max_instances=args.nodes,
                                                     idle_time_before_scale_down=30)).result()
        if storm:
            policy = rest.put(f"/_emulator{ws}/computes/{CLUSTER}/preemption",
                              json={"meanSecondsBetweenPreemptions": args.mean, "seed": args.seed})
            if policy.status_code != 200:
                raise RuntimeError(f"preemption policy refused: {policy.status_code} {policy.text}")
        wall0 = time.time()
        names = submit_all(ml, args, args.scenario[:5])
        submitted = time.time() - wall0
        watch = Watch(rest, ws, names)
        wait_until(watch.poll, timeout=args.timeout, interval=1.0, message=f"{args.jobs} jobs to end")
        seen = time.time() - wall0
        jobs = outcome(stack, watch, names, args, wall0)
        left = job_containers_left(stack.label)
    done = [j["completed_after"] for j in jobs.values() if j["completed_after"] is not None]
    return {"scenario": args.scenario, "jobs": jobs,
            "notices": notices(HERE / "logs" / f"storm-{args.scenario}" / "stack.log"), "submitted_in": submitted, "last_end_seen": seen,
            "wall": max(done) if done else None, "nodes_used": len(watch.nodes_seen),
            "nodes_preempted": len(watch.preempted), "peak_nodes": watch.peak_nodes,
            "job_containers_left": left,
            "policy": {"meanSecondsBetweenPreemptions": args.mean, "seed": args.seed} if storm else None}


# ---------------------------------------------------------------- the parent: both scenarios, the report

def summary(run: dict) -> dict:
    jobs = run["jobs"].values()
    return {"jobs": len(run["jobs"]), "completed": sum(j["status"] == "Completed" for j in jobs),
            "nodes_preempted": run["nodes_preempted"], "jobs_preempted": sum(j["preempted"] for j in jobs),
            "attempts": sum(j["attempts"] for j in jobs), "max_attempts": max(j["attempts"] for j in jobs),
            "resumed": sum(j["resumed"] for j in jobs), "results_ok": sum(j["result_ok"] for j in jobs),
            "written_once": sum(j["results_written"] == 1 for j in jobs), "wall": run["wall"],
            "nodes_used": run["nodes_used"], "peak_nodes": run["peak_nodes"],
            "job_containers_left": run["job_containers_left"], **{f"log_{k}": v for k, v in run["notices"].items()}}


def child(args: argparse.Namespace, scenario: str, folder: Path) -> dict:
    out = folder / f"{scenario}.json"
    command = [sys.executable, "-m", "bench.storm", "--scenario", scenario, "--child-out", str(out),
               *(f"--{k.replace('_', '-')}={getattr(args, k)}" for k in
                 ("jobs", "nodes", "mean", "seed", "steps", "step_seconds", "timeout"))]
    console.print(f"[bold]{scenario}[/]: {args.jobs} jobs on 0..{args.nodes} low-priority nodes"
                  + (f", a preemption every {args.mean:g} s on average (seed {args.seed})" if scenario == "storm"
                     else ", no preemption"))
    started = time.perf_counter()
    finished = subprocess.run(command, cwd=ROOT)
    if finished.returncode != 0:
        raise SystemExit(f"the {scenario} run failed (exit {finished.returncode}); logs in bench/logs/storm-{scenario}/")
    run = json.loads(out.read_text())
    console.print(f"  done in {time.perf_counter() - started:.0f} s (stack included): {summary(run)}")
    return run


def _notices(run: dict) -> str:
    return f"{run['log_notices']}: {run['log_acknowledged']} / {run['log_taken'] - run['log_acknowledged']}"


def rows(report: dict) -> list[tuple[str, str, str]]:
    calm, storm = report["undisturbed"], report["storm"]
    ideal = report["setup"]["ideal_seconds"]
    return [
        ("jobs completed", f"{calm['completed']}/{calm['jobs']}", f"{storm['completed']}/{storm['jobs']}"),
        ("random preemptions drawn (of which found no node)", f"{calm['log_draws']} ({calm['log_no_node_to_take']})",
         f"{storm['log_draws']} ({storm['log_no_node_to_take']})"),
        ("notices given: acknowledged by the job / ran to NotBefore (30 s)", _notices(calm), _notices(storm)),
        ("nodes preempted (listed preempted)", str(calm["nodes_preempted"]), str(storm["nodes_preempted"])),
        ("preemptions that hit a running job", str(calm["jobs_preempted"]), str(storm["jobs_preempted"])),
        ("attempts in all (most for one job)", f"{calm['attempts']} ({calm['max_attempts']})",
         f"{storm['attempts']} ({storm['max_attempts']})"),
        ("reruns that resumed from a checkpoint", str(calm["resumed"]), str(storm["resumed"])),
        ("results equal to the undisturbed value, written once",
         f"{min(calm['results_ok'], calm['written_once'])}/{calm['jobs']}",
         f"{min(storm['results_ok'], storm['written_once'])}/{storm['jobs']}"),
        ("nodes started (at most at once)", f"{calm['nodes_used']} ({calm['peak_nodes']})",
         f"{storm['nodes_used']} ({storm['peak_nodes']})"),
        ("wall time, first submit → last Completed", f"{calm['wall']:.1f} s ({calm['wall'] / ideal:.2f}× ideal)",
         f"{storm['wall']:.1f} s ({storm['wall'] / ideal:.2f}× ideal)"),
        ("storm / undisturbed wall time", "", f"{report['ratio']:.2f}×"),
        ("job containers left after the last job", str(calm["job_containers_left"]),
         str(storm["job_containers_left"])),
    ]


def notes(report: dict) -> str:
    s, m = report["setup"], report["machine"]
    return (f"{s['jobs']} × `sample_jobs/checkpointing` ({s['steps']} steps of {s['step_seconds']:g} s, a checkpoint "
            f"every 5 steps) on a low-priority `Standard_DS3_v2` cluster of 0 to {s['nodes']} nodes, time scale 1; "
            f"ideal {s['jobs']} × {s['steps'] * s['step_seconds']:g} s / {s['nodes']} = {s['ideal_seconds']:.0f} s. "
            f"The storm: random preemption through the cluster's policy, a mean of {s['mean']:g} s between "
            f"preemptions (a Poisson timeline, seed {s['seed']}), each giving a random up or starting node a Preempt "
            f"notice. A job that reads the notice checkpoints and acknowledges it, and its node goes within a second; "
            f"a notice nobody acknowledges (a starting or idle node, a job stopped by the SIGTERM before it read the "
            f"notice) runs its 30 s, and the node fills one of the cluster's places until then. Each run has a stack "
            f"of its own and is measured from just before the first `create_or_update` to the last `Completed` the stack "
            f"stored. Machine: {m['cpus']} × {m['cpu']}, {m['memory_gib']} GiB RAM, Docker {m['docker']}, "
            f"azure-ai-ml {m['azure_ai_ml']}; {m['date']}; load average {report['load'][0]:.2f} before, "
            f"{report['load'][1]:.2f} after.")


def write_markdown(report: dict, path: Path) -> None:
    lines = [SECTION, "", "`make bench-storm` (`bench/storm.py`): the same jobs undisturbed and under a preemption "
             "storm, each run on a stack of its own; figures in `bench/storm.json`.", "",
             "| | undisturbed | storm |", "| --- | --- | --- |"]
    lines += [f"| {what} | {calm} | {storm} |" for what, calm, storm in rows(report)]
    lines += ["", notes(report)]
    replace_section(path, SECTION, lines)


def print_table(report: dict) -> None:
    show("Preemption storm against the same jobs undisturbed", ["", "undisturbed", "storm"], rows(report),
         notes(report))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--jobs", type=int, default=30)
    parser.add_argument("--nodes", type=int, default=3, help="the cluster's maximum node count")
    parser.add_argument("--mean", type=float, default=10.0, help="mean seconds between preemptions in the storm")
    parser.add_argument("--seed", type=int, default=42, help="the storm's timeline")
    parser.add_argument("--steps", type=int, default=30, help="each job's training steps")
    parser.add_argument("--step-seconds", type=float, default=0.5, help="each step's simulated work")
    parser.add_argument("--timeout", type=float, default=900.0, help="seconds a run may take, submit to last end")
    parser.add_argument("--out", type=Path, default=HERE, help="where storm.json and RESULTS.md go")
    parser.add_argument("--scenario", choices=SCENARIOS, help=argparse.SUPPRESS)
    parser.add_argument("--child-out", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.scenario:
        args.child_out.write_text(json.dumps(run_scenario(args), indent=2) + "\n")
        return
    report: dict = {"load": [os.getloadavg()[0]], "runs": {}}
    with tempfile.TemporaryDirectory(prefix="amlemu-storm-") as folder:
        for scenario in SCENARIOS:
            report["runs"][scenario] = child(args, scenario, Path(folder))
    report["load"].append(os.getloadavg()[0])
    report["setup"] = {k: getattr(args, k) for k in ("jobs", "nodes", "mean", "seed", "steps", "step_seconds")}
    report["setup"]["ideal_seconds"] = args.jobs * args.steps * args.step_seconds / args.nodes
    report.update({scenario: summary(run) for scenario, run in report["runs"].items()})
    report["ratio"] = report["storm"]["wall"] / report["undisturbed"]["wall"]
    report["machine"] = machine()
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "storm.json").write_text(json.dumps(report, indent=2) + "\n")
    write_markdown(report, args.out / "RESULTS.md")
    print_table(report)
    bad = [s for s in SCENARIOS if report[s]["completed"] != args.jobs or report[s]["results_ok"] != args.jobs
           or report[s]["written_once"] != args.jobs]
    if bad:
        raise SystemExit(f"not every job completed with the right result written once: {', '.join(bad)}")


if __name__ == "__main__":
    main()
