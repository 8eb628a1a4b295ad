"""amlemu's speed, as ratios against raw Docker baselines measured in the same run.

Starts a composed stack of its own (own project, port, data folder and networks, as tests/e2e/conftest.py
does), drives it with the unmodified azure-ai-ml SDK, and measures:

1. warm submit → Running: one idle node waiting; against `docker run --rm` of the same image to running;
2. cold submit → Running: a cluster with no node (0 → 1 node, no provisioning delay); same baseline;
3. throughput: N × `sleep 1` on 4 idle nodes, first submit → last Completed seen, against N × 1 s / 4.

Every figure is time.perf_counter on this host; medians over --repeat runs; nothing is retried. Next to each
run it records the stack's own timestamps (the job's status history from the stack's database, Docker's
container events), so the report can say where the time goes.

    .venv/bin/python -m bench.run [--repeat 5] [--jobs 100]      (or: make bench)
"""

import argparse
import contextlib
import json
import os
import platform
import shutil
import socket
import sqlite3
import statistics
import sys
import tempfile
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # `python bench/run.py` as well as `python -m bench.run`

import docker  # noqa: E402
from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402

from emulator.cli.stack import Stack  # noqa: E402
from emulator.runtime.docker import DockerRuntime  # noqa: E402
from tests.waiting import wait_until  # noqa: E402  (the one sleeper: polls with a deadline)

HERE = Path(__file__).resolve().parent
IMAGE = "amlemu/python-stand-in:3-slim"  # what Environment(image="python:3.11-slim") runs on
SDK_IMAGE = "python:3.11-slim"
HOLD = "sleep 3"  # warm and cold jobs (and the raw containers) run this: long enough to be seen Running
POLL = 0.02  # seconds between ml_client.jobs.get calls while waiting for Running
TERMINAL = {"Completed", "Failed", "Canceled", "NotResponding", "Paused"}
console = Console()


# ---------------------------------------------------------------- the stack, as tests/e2e/conftest.py runs it

def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def own_stack(logs: Path):
    suffix = uuid.uuid4().hex[:6]
    home = Path(tempfile.mkdtemp(prefix="amlemu-bench-home-"))
    env = {"AMLEMU_HOME": str(home), "AMLEMU_PORT": str(_free_port()), "AMLEMU_PROJECT": f"amlemu-bench-{suffix}",
           "AMLEMU_STACK": f"bench-{suffix}", "AMLEMU_NETWORK": f"amlemu-bench-{suffix}",
           "AMLEMU_TIME_SCALE": "1.0", "AMLEMU_PROVISIONING_DELAY_SECONDS": "0"}
    os.environ.update(env)
    stack = Stack.from_env()
    stack.compose("up", "-d", capture=True)
    runtime = DockerRuntime()
    try:
        if not stack.wait_healthy(timeout=120):
            raise SystemExit(stack.compose("logs", capture=True).stdout[-5000:])
        os.environ.update(stack.env_vars())
        yield stack
    finally:
        logs.mkdir(parents=True, exist_ok=True)
        (logs / "stack.log").write_text(stack.compose("logs", "-t", "--no-color", capture=True).stdout)
        stack.compose("stop", "controller", capture=True)
        for role in ("node", "job"):
            for container in runtime.list({"amlemu.stack": stack.label, "amlemu.role": role}):
                runtime.remove(container.id)
        for container in runtime.client.containers.list(all=True, filters={"label": f"amlemu.bench={stack.label}"}):
            container.remove(force=True)
        stack.compose("down", "-v", capture=True)
        runtime.remove_network(f"{stack.network}-jobs")
        shutil.rmtree(home, ignore_errors=True)


class ContainerEvents:
    """Docker's create/start events for this stack's containers, stamped by the engine (the host's clock)."""

    def __init__(self, client: docker.DockerClient, stack_label: str):
        self.seen: list[tuple[float, str, dict]] = []
        self.stream = client.events(decode=True, filters={"type": "container", "event": ["create", "start"],
                                                           "label": f"amlemu.stack={stack_label}"})
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        with contextlib.suppress(Exception):  # ends when the stream is closed
            for event in self.stream:
                self.seen.append((event["timeNano"] / 1e9, event["Action"], event["Actor"]["Attributes"]))

    def first(self, action: str, labels: dict[str, str]) -> float | None:
        """Wall time of the first `action` of a container carrying all `labels`, or None."""
        times = [t for t, a, attrs in list(self.seen)
                 if a == action and all(attrs.get(k) == v for k, v in labels.items())]
        return min(times) if times else None

    def close(self) -> None:
        self.stream.close()


def job_history(home: Path, name: str) -> dict[str, float]:
    """Status → wall time of its first entry, from the stack's own database (read only)."""
    with contextlib.closing(sqlite3.connect(f"file:{home / 'amlemu.db'}?mode=ro", uri=True)) as db:
        row = db.execute("select history from jobs where name = ?", (name,)).fetchone()
    times: dict[str, float] = {}
    for entry in json.loads(row[0]) if row else []:
        times.setdefault(entry["status"], datetime.fromisoformat(entry["time"]).timestamp())
    return times


# ---------------------------------------------------------------- measurements

def raw_docker_run(client: docker.DockerClient, label: str) -> float:
    """`docker run --rm` of the job image with the job's command, no ports, default network: seconds to running."""
    started = time.perf_counter()
    container = client.containers.run(IMAGE, [HOLD], entrypoint=["/bin/sh", "-c"], detach=True, remove=True,
                                      labels={"amlemu.bench": label})
    while container.status != "running":
        if container.status in ("exited", "dead"):
            raise RuntimeError(f"raw container ended before running: {container.status}")
        container.reload()
    elapsed = time.perf_counter() - started
    container.remove(force=True)
    return elapsed


def node_states(ml, compute: str) -> list[str]:
    return [n.__dict__.get("nodeState") or getattr(n, "node_state", None) for n in ml.compute.list_nodes(compute)]


def create_cluster(ml, name: str, nodes_min: int, nodes_max: int) -> None:
    from azure.ai.ml.entities import AmlCompute

    ml.compute.begin_create_or_update(AmlCompute(name=name, size="Standard_DS3_v2", min_instances=nodes_min,
                                                 max_instances=nodes_max, idle_time_before_scale_down=600)).result()
    wait_until(lambda: node_states(ml, name) == ["idle"] * nodes_min, timeout=180, interval=0.2,
               message=f"{nodes_min} idle node(s) on {name}")


def new_job(compute: str, command_line: str, name: str | None = None):
    from azure.ai.ml import command
    from azure.ai.ml.entities import Environment

    return command(name=name, command=command_line, environment=Environment(image=SDK_IMAGE), compute=compute,
                   experiment_name="bench")


def submit_to_running(ml, compute: str, events: ContainerEvents, stack: Stack) -> dict:
    """One job: seconds from just before create_or_update to the first jobs.get that says Running."""
    job = new_job(compute, HOLD)
    wall0, t0 = time.time(), time.perf_counter()
    name = ml.jobs.create_or_update(job).name
    submitted = time.perf_counter() - t0
    polls: list[float] = []  # when each jobs.get returned

    def running() -> bool:
        status = ml.jobs.get(name).status
        polls.append(time.perf_counter() - t0)
        if status in TERMINAL:
            raise RuntimeError(f"job {name} is {status} after {polls[-1]:.1f}s, never seen Running")
        return status == "Running"

    wait_until(running, timeout=120, interval=POLL, message=f"{name} to be Running")
    final = wait_until(lambda: (s := ml.jobs.get(name).status) in TERMINAL and s, timeout=120, interval=0.2,
                       message=f"{name} to end")
    if final != "Completed":
        raise RuntimeError(f"job {name} ended {final}")
    history = job_history(stack.home, name)

    def rel(wall: float | None) -> float | None:
        return None if wall is None else round(wall - wall0, 3)

    node = {"amlemu.role": "node", "amlemu.compute": compute}
    container = {"amlemu.role": "job", "amlemu.job-name": name}

    return {"name": name, "seconds": polls[-1], "submit_call": submitted, "polls": len(polls),
            "previous_poll": polls[-2] if len(polls) > 1 else submitted,
            "server": {status: rel(t) for status, t in history.items()},
            "node_container_created": rel(events.first("create", node)),
            "node_container_started": rel(events.first("start", node)),
            "job_container_created": rel(events.first("create", container)),
            "job_container_started": rel(events.first("start", container))}


def startup(ml, client, events, stack, repeat: int, cold: bool) -> dict:
    """`repeat` × (a raw docker run, then one job), interleaved so both see the same machine."""
    runs, raws = [], []
    for i in range(repeat):
        raws.append(raw_docker_run(client, stack.label))
        compute = f"bench-cold-{i}" if cold else "bench-warm"
        if cold:
            create_cluster(ml, compute, 0, 1)
            if node_states(ml, compute):
                raise RuntimeError(f"{compute} has nodes before the cold start")
        else:
            wait_until(lambda: node_states(ml, "bench-warm") == ["idle"], timeout=60, interval=0.1,
                       message="the warm node to be idle")
        runs.append(submit_to_running(ml, compute, events, stack))
        if cold:
            ml.compute.begin_delete(compute).result()
        console.print(f"  {'cold' if cold else 'warm'} {i + 1}/{repeat}: amlemu {runs[-1]['seconds']:.3f}s "
                      f"(server Running at {runs[-1]['server'].get('Running')}s), raw docker {raws[-1]:.3f}s")
    return {"amlemu": statistics.median(r["seconds"] for r in runs), "raw": statistics.median(raws),
            "runs": runs, "raw_runs": raws}


def throughput(ml, compute: str, stack: Stack, jobs: int, nodes: int, threads: int) -> dict:
    """`jobs` × sleep 1 submitted back to back; seconds from the first submit to the last Completed seen."""
    tag = uuid.uuid4().hex[:6]
    names = [f"bench-tp-{tag}-{i:03d}" for i in range(jobs)]
    wall0, t0 = time.time(), time.perf_counter()

    def submit(name: str) -> float:
        ml.jobs.create_or_update(new_job(compute, "sleep 1", name))
        return time.perf_counter() - t0

    with ThreadPoolExecutor(threads) as pool:
        submitted = list(pool.map(submit, names))
    wanted, statuses, seen = set(names), {}, []

    def all_ended() -> bool:
        statuses.update({j.name: j.status for j in ml.jobs.list() if j.name in wanted})
        seen.append(time.perf_counter() - t0)
        return len(statuses) == jobs and all(s in TERMINAL for s in statuses.values())

    wait_until(all_ended, timeout=600, interval=0.05, message=f"{jobs} jobs to end")
    now = seen[-1]
    failed = {n: s for n, s in statuses.items() if s != "Completed"}
    if failed:
        raise RuntimeError(f"throughput: {len(failed)} job(s) did not complete: {failed}")
    history = {name: job_history(stack.home, name) for name in names}
    ends = sorted(h["Completed"] - wall0 for h in history.values())
    running = [h["Running"] - wall0 for h in history.values()]
    busy = sum(h["Completed"] - h["Running"] for h in history.values())
    return {"seconds": now, "ideal": jobs * 1.0 / nodes, "jobs": jobs, "nodes": nodes, "submit_threads": threads,
            "previous_list": seen[-2] if len(seen) > 1 else None, "list_calls": len(seen),
            "all_submitted": max(submitted), "first_running": min(running), "last_completed_server": ends[-1],
            "running_to_completed_mean": busy / jobs,
            "per_job_slot_seconds": ends[-1] * nodes / jobs}


# ---------------------------------------------------------------- report

def machine() -> dict:
    cpuinfo = Path("/proc/cpuinfo").read_text()
    models = [line.split(":", 1)[1].strip() for line in cpuinfo.splitlines() if line.startswith("model name")]
    mem_kb = next(int(line.split()[1]) for line in Path("/proc/meminfo").read_text().splitlines()
                  if line.startswith("MemTotal"))
    import azure.ai.ml

    return {"cpu": models[0] if models else platform.processor(), "cpus": len(models) or os.cpu_count(),
            "memory_gib": round(mem_kb / 2**20, 1), "docker": docker.from_env().version()["Version"],
            "python": platform.python_version(), "azure_ai_ml": azure.ai.ml.__version__,
            "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")}


def rows(results: dict) -> list[dict]:
    warm, cold, tp = results["warm"], results["cold"], results["throughput"]
    warm_limit = 1.5 * warm["raw"] + 0.2
    return [
        {"measurement": "warm submit → Running (1 idle node), median", "amlemu": warm["amlemu"],
         "baseline": warm["raw"], "baseline_is": "docker run --rm → running, median",
         "ratio": warm["amlemu"] / warm["raw"], "target": f"≤ 1.5 × raw + 0.2 s = {warm_limit:.2f} s",
         "pass": warm["amlemu"] <= warm_limit},
        {"measurement": "cold submit → Running (0 → 1 node), median", "amlemu": cold["amlemu"],
         "baseline": cold["raw"], "baseline_is": "docker run --rm → running, median",
         "ratio": cold["amlemu"] / cold["raw"], "target": "≤ 3 s", "pass": cold["amlemu"] <= 3.0},
        {"measurement": f"throughput: {tp['jobs']} × sleep 1 on {tp['nodes']} idle nodes, first submit → last "
                        f"Completed ({tp['submit_threads']} submit thread(s))",
         "amlemu": tp["seconds"], "baseline": tp["ideal"], "baseline_is": f"ideal {tp['jobs']} × 1 s / {tp['nodes']}",
         "ratio": tp["seconds"] / tp["ideal"], "target": "≤ 1.25 × ideal", "pass": tp["seconds"] <= 1.25 * tp["ideal"]},
    ]


def print_table(results: dict) -> None:
    table = Table(title="amlemu vs raw baselines (same run)")
    for column in ("measurement", "amlemu", "baseline", "ratio", "target", "result"):
        table.add_column(column, justify="right" if column in ("amlemu", "baseline", "ratio") else "left")
    for r in rows(results):
        table.add_row(r["measurement"], f"{r['amlemu']:.3f} s", f"{r['baseline']:.3f} s\n({r['baseline_is']})",
                      f"{r['ratio']:.2f}×", r["target"], "[green]pass[/]" if r["pass"] else "[red]FAIL[/]")
    console.print(table)
    m = results["machine"]
    console.print(f"{m['cpus']} × {m['cpu']}, {m['memory_gib']} GiB, Docker {m['docker']}, "
                  f"azure-ai-ml {m['azure_ai_ml']}, {m['date']}")


def write_markdown(results: dict, path: Path) -> None:
    m, warm, tp = results["machine"], results["warm"], results["throughput"]
    lines = ["# amlemu benchmark results", "",
             f"Machine: {m['cpus']} × {m['cpu']}, {m['memory_gib']} GiB RAM, Docker {m['docker']}, "
             f"Python {m['python']}, azure-ai-ml {m['azure_ai_ml']}. Run {m['date']} by `make bench`.", "",
             "| measurement | amlemu | baseline | ratio | target | result |", "| --- | --- | --- | --- | --- | --- |"]
    for r in rows(results):
        lines.append(f"| {r['measurement']} | {r['amlemu']:.3f} s | {r['baseline']:.3f} s ({r['baseline_is']}) "
                     f"| {r['ratio']:.2f}× | {r['target']} | {'pass' if r['pass'] else '**FAIL**'} |")
    lines += ["", f"Medians of {len(warm['runs'])} runs each; every raw run directly precedes its amlemu run. "
              f"Submit → Running is timed from just before `ml_client.jobs.create_or_update` to the first "
              f"`ml_client.jobs.get` (polled every {POLL * 1000:.0f} ms) that says Running. "
              f"A warm-up job ran first and is not counted ({results['warmup']['seconds']:.3f} s). "
              f"Throughput: the cluster had min = max = {tp['nodes']} nodes, all idle before the first submit; "
              f"jobs submitted from {tp['submit_threads']} thread(s) (all in by {tp['all_submitted']:.1f} s); "
              f"last Completed in the stack's history at {tp['last_completed_server']:.2f} s; "
              f"Running → Completed took {tp['running_to_completed_mean']:.2f} s per job on average.", ""]
    path.write_text("\n".join(lines))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=5, help="runs of each start-up measurement (median)")
    parser.add_argument("--jobs", type=int, default=100, help="jobs in the throughput measurement")
    parser.add_argument("--out", type=Path, default=HERE, help="where results.json and RESULTS.md go")
    args = parser.parse_args()
    client = docker.from_env()
    with own_stack(args.out / "logs") as stack:
        from azure.ai.ml import MLClient  # after the amlemu env variables are set
        from azure.identity import DefaultAzureCredential

        ml = MLClient(DefaultAzureCredential(), os.environ["AMLEMU_SUBSCRIPTION_ID"],
                      os.environ["AMLEMU_RESOURCE_GROUP"], os.environ["AMLEMU_WORKSPACE"])
        events = ContainerEvents(client, stack.label)
        console.print(f"stack {stack.label} on port {stack.port}; warm cluster: 1 node (min 1, max 1)")
        create_cluster(ml, "bench-warm", 1, 1)
        results = {"warmup": submit_to_running(ml, "bench-warm", events, stack)}
        console.print(f"  warm-up job (not counted): {results['warmup']['seconds']:.3f}s")
        results["warm"] = startup(ml, client, events, stack, args.repeat, cold=False)
        ml.compute.begin_delete("bench-warm").result()
        results["cold"] = startup(ml, client, events, stack, args.repeat, cold=True)
        # The SDK's per-call latency decides: N sequential submits taking over a tenth of the ideal → a pool.
        submit_call = statistics.median(r["submit_call"] for r in results["warm"]["runs"] + results["cold"]["runs"])
        ideal = args.jobs / 4
        threads = 8 if args.jobs * submit_call > 0.1 * ideal else 1
        console.print(f"throughput: create_or_update takes {submit_call * 1000:.0f} ms (median), × {args.jobs} = "
                      f"{args.jobs * submit_call:.1f}s vs ideal {ideal:.0f}s → {threads} submit thread(s); "
                      "cluster: min 4, max 4, all 4 idle before the first submit")
        create_cluster(ml, "bench-tp", 4, 4)
        results["throughput"] = throughput(ml, "bench-tp", stack, args.jobs, 4, threads)
        events.close()
    results["machine"] = machine()
    results["rows"] = rows(results)
    (args.out / "results.json").write_text(json.dumps(results, indent=2, default=str) + "\n")
    write_markdown(results, args.out / "RESULTS.md")
    print_table(results)


if __name__ == "__main__":
    main()
