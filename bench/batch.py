"""Batch endpoint scoring against its ideal and against one process doing the same work, in one run.

Starts a composed stack of its own (bench/run.py's `own_stack`), makes a cluster of 4 idle nodes and a batch
deployment on it with the unmodified azure-ai-ml SDK (2 workers per node, 10 files per mini-batch, python:3.11-slim),
and a scoring script whose `run()` reads each file and waits a fixed time per file (--item-seconds), so the ideal is
known: files × per-file time / (4 × 2). Then it measures:

1. amlemu: `batch_endpoints.invoke` with a local folder of N one-line files (the SDK uploads it) until the job
   is Completed, and predictions.csv downloaded and checked (one row per file);
2. the same scoring script, loaded in one process on the host, `init()` once then `run([file])` for every file.

Writes batch.json and the "Batch endpoint scoring" section of RESULTS.md next to this file.

    .venv/bin/python -m bench.batch [--files 10000] [--item-seconds 0.01]      (or: make bench-batch)
"""

import argparse
import importlib.util
import json
import os
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from rich.console import Console  # noqa: E402

from bench.run import create_cluster, machine, own_stack, replace_section  # noqa: E402
from tests.waiting import wait_until  # noqa: E402  (the project's one sleeper: polls with a deadline)

HERE = Path(__file__).resolve().parent
CLUSTER, NODES, WORKERS, MINI_BATCH = "bench-batch", 4, 2, 10
SECTION = "## Batch endpoint scoring"
SCORE = """import os
import time

SECONDS = float(os.environ.get("ITEM_SECONDS", "0"))


def init():
    pass


def run(mini_batch):
    rows = []
    for path in mini_batch:
        with open(path) as f:
            rows.append(f"{os.path.basename(path)},{len(f.read())}")
        time.sleep(SECONDS)
    return rows
"""
TERMINAL = {"Completed", "Failed", "Canceled", "NotResponding", "Paused"}
console = Console()


def make_files(folder: Path, count: int) -> list[str]:
    folder.mkdir()
    names = [f"item-{n:05d}.txt" for n in range(count)]
    for name in names:
        (folder / name).write_text(f"{name}\n")
    return names


def job_status(ml, name: str) -> str:
    status = ml.jobs.get(name).status
    return getattr(status, "value", status)  # the SDK gives a JobStatus enum or a str


def emulated(ml, work: Path, names: list[str], item_seconds: float) -> dict:
    from azure.ai.ml import Input
    from azure.ai.ml.entities import (
        BatchEndpoint,
        BatchRetrySettings,
        CodeConfiguration,
        Environment,
        Model,
        ModelBatchDeployment,
        ModelBatchDeploymentSettings,
        ResourceConfiguration,
    )

    endpoint = f"bench-{uuid.uuid4().hex[:6]}"
    ml.batch_endpoints.begin_create_or_update(BatchEndpoint(name=endpoint)).result()
    ml.batch_deployments.begin_create_or_update(ModelBatchDeployment(
        name="bench", endpoint_name=endpoint, model=Model(path=str(work / "model"), name=f"{endpoint}-model"),
        code_configuration=CodeConfiguration(code=str(work / "src"), scoring_script="score.py"),
        environment=Environment(image="python:3.11-slim"), compute=CLUSTER,
        resources=ResourceConfiguration(instance_count=NODES),
        settings=ModelBatchDeploymentSettings(mini_batch_size=MINI_BATCH, max_concurrency_per_instance=WORKERS,
                                              environment_variables={"ITEM_SECONDS": str(item_seconds)},
                                              retry_settings=BatchRetrySettings(max_retries=1, timeout=300)))).result()
    started = time.monotonic()
    job = ml.batch_endpoints.invoke(endpoint_name=endpoint, deployment_name="bench",
                                    input=Input(type="uri_folder", path=str(work / "data")))
    invoked = time.monotonic()
    status = {}
    wait_until(lambda: status.update(s=job_status(ml, job.name)) or status["s"] in TERMINAL,
               timeout=3600, interval=0.5, message=f"{job.name} ended")
    ended = time.monotonic()
    ml.jobs.download(job.name, download_path=str(work / "out"))
    lines = (work / "out" / "predictions.csv").read_text().splitlines()
    scored = sorted(line.split(",")[0] for line in lines)
    return {"job": job.name, "status": status["s"], "upload_and_invoke": invoked - started,
            "invoke_to_completed": ended - invoked, "total": ended - started, "rows": len(lines),
            "every_file_once": scored == sorted(names)}


def one_process(work: Path, names: list[str], item_seconds: float) -> float:
    os.environ["ITEM_SECONDS"] = str(item_seconds)
    spec = importlib.util.spec_from_file_location("bench_batch_score", work / "src" / "score.py")
    script = importlib.util.module_from_spec(spec)
    started = time.monotonic()
    spec.loader.exec_module(script)
    script.init()
    rows = [row for name in names for row in script.run([str(work / "data" / name)])]
    seconds = time.monotonic() - started
    assert len(rows) == len(names)
    return seconds


def write_markdown(report: dict, path: Path) -> None:
    amlemu, files = report["amlemu"], report["files"]
    ideal, loop = report["ideal"], report["one_process"]
    lines = [SECTION, "", f"`make bench-batch` (`bench/batch.py`, {report['machine']['date']}, "
             f"{report['machine']['cpus']} CPUs): {files} one-line files, {report['item_seconds']} s of work each, "
             f"scored by a batch deployment on {NODES} nodes × {WORKERS} workers ({MINI_BATCH} files per "
             "mini-batch, python:3.11-slim), invoked with a local folder through the azure-ai-ml SDK.", "",
             "| measurement | seconds | against the ideal | against one process |", "| --- | --- | --- | --- |",
             f"| ideal: {files} × {report['item_seconds']} s / {NODES * WORKERS} | {ideal:.1f} | 1.00× | |",
             f"| one process, same script, on the host (`init()`, then `run([file])` per file) | {loop:.1f} | "
             f"{loop / ideal:.2f}× | 1.00× |",
             f"| amlemu: invoke → Completed | {amlemu['invoke_to_completed']:.1f} | "
             f"{amlemu['invoke_to_completed'] / ideal:.2f}× | {amlemu['invoke_to_completed'] / loop:.2f}× |",
             f"| amlemu: SDK upload of the folder + invoke → Completed | {amlemu['total']:.1f} | "
             f"{amlemu['total'] / ideal:.2f}× | {amlemu['total'] / loop:.2f}× |", "",
             f"The job {amlemu['status']}; predictions.csv had {amlemu['rows']} rows, every file exactly once: "
             f"{amlemu['every_file_once']}. The upload and the invoke call took {amlemu['upload_and_invoke']:.1f} s. "
             f"Load average {report['load'][0]:.2f} before, {report['load'][1]:.2f} after."]
    replace_section(path, SECTION, lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--files", type=int, default=10_000)
    parser.add_argument("--item-seconds", type=float, default=0.01, help="the scoring script's wait per file")
    parser.add_argument("--out", type=Path, default=HERE, help="where batch.json and RESULTS.md go")
    args = parser.parse_args()
    load = [os.getloadavg()[0]]
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        names = make_files(work / "data", args.files)
        for folder, name, text in (("src", "score.py", SCORE), ("model", "weights.txt", "1")):
            (work / folder).mkdir()
            (work / folder / name).write_text(text)
        loop = one_process(work, names, args.item_seconds)
        console.print(f"one process: {args.files} files in {loop:.1f} s")
        with own_stack(HERE / "logs" / "batch") as stack:
            from azure.ai.ml import MLClient  # after the amlemu env variables are set
            from azure.identity import DefaultAzureCredential

            ml = MLClient(DefaultAzureCredential(), stack.subscription, stack.resource_group, stack.workspace)
            console.print(f"stack {stack.label} on port {stack.port}; cluster {CLUSTER}: {NODES} idle nodes")
            create_cluster(ml, CLUSTER, NODES, NODES)
            amlemu = emulated(ml, work, names, args.item_seconds)
        load.append(os.getloadavg()[0])
    report = {"files": args.files, "item_seconds": args.item_seconds, "nodes": NODES, "workers": WORKERS,
              "mini_batch_size": MINI_BATCH, "ideal": args.files * args.item_seconds / (NODES * WORKERS),
              "one_process": loop, "amlemu": amlemu, "load": load, "machine": machine()}
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "batch.json").write_text(json.dumps(report, indent=2) + "\n")
    write_markdown(report, args.out / "RESULTS.md")
    console.print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
