"""Scoring through an online endpoint's URL against calling its model container directly, in one run.

Starts a composed stack of its own (bench/run.py's `own_stack`), deploys a one-instance deployment with the
unmodified azure-ai-ml SDK (a tiny scoring script that echoes its input, so the figures are the plumbing's),
then measures, on the same container and with the same client:

1. latency: sequential requests, p50 and p99, through the scoring URL (key check, traffic pick, router hop)
   and straight to the container's inference server on the scoring network; in alternating blocks so that
   drift on a shared machine hits both alike;
2. throughput: a fixed number of requests with a fixed concurrency, requests per second, both ways.

Before that it times the deployment, made with Azure's default probes (10 s initial delay): from the SDK's
create to `Succeeded`, and from the container's own start (docker inspect's State.StartedAt) to `Succeeded`.

Targets: at most 2 ms added at p50, at least 0.9 × the direct throughput (issue 6); `Succeeded` within 3 s
of the container's start (issue 15). Writes scoring.json and
the "Online endpoint scoring" section of RESULTS.md next to this file.

    .venv/bin/python -m bench.scoring [--requests 2000] [--concurrency 8]      (or: make bench-scoring)
"""

import argparse
import asyncio
import contextlib
import json
import os
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import httpx  # noqa: E402
from rich.console import Console  # noqa: E402

from bench.run import machine, own_stack, replace_section  # noqa: E402
from emulator import tokens  # noqa: E402
from emulator.domain.serving import model_server  # noqa: E402
from emulator.runtime.docker import DockerRuntime  # noqa: E402
from tests.waiting import wait_until  # noqa: E402  (the project's one sleeper: polls with a deadline)

HERE = Path(__file__).resolve().parent
SECTION = "## Online endpoint scoring"
SCORE = "import json\n\ndef init():\n    pass\n\ndef run(raw_data):\n    return json.loads(raw_data)\n"
BODY = {"data": [[1.0, 2.0, 3.0, 4.0]]}
BLOCK = 100  # requests per alternating latency block
ROUNDS = 4  # alternating throughput rounds; the median of each side's
READY_TARGET_S = 3.0  # issue 15: the deployment Succeeded within 3 s of its container's start
console = Console()


def deploy(ml, workdir: Path, secret: bytes) -> tuple[str, str, str, dict, dict]:
    """(scoring URI, key, the instance's address on the scoring network, the headers a direct call needs (the
    deployment's server key, which the router adds to each request it forwards), how fast it was ready)."""
    from azure.ai.ml.entities import (
        CodeConfiguration,
        Environment,
        ManagedOnlineDeployment,
        ManagedOnlineEndpoint,
        Model,
    )

    (workdir / "model").mkdir()
    (workdir / "model" / "weights.txt").write_text("1")
    (workdir / "src").mkdir()
    (workdir / "src" / "score.py").write_text(SCORE)
    name = f"bench-{uuid.uuid4().hex[:6]}"
    model = ml.models.create_or_update(Model(name=f"{name}-model", path=str(workdir / "model")))
    endpoint = ml.online_endpoints.begin_create_or_update(ManagedOnlineEndpoint(name=name, auth_mode="key")).result()
    # Azure's default probes (readiness and liveness: 10 s initial delay, every 10 s): readiness must not wait
    # out its initial delay before the first try.
    poller = ml.online_deployments.begin_create_or_update(ManagedOnlineDeployment(
        name="blue", endpoint_name=name, model=model, instance_type="Standard_DS3_v2", instance_count=1,
        code_configuration=CodeConfiguration(code=str(workdir / "src"), scoring_script="score.py"),
        environment=Environment(image="python:3.11-slim")))
    created = time.time()  # the SDK has uploaded what it needs and sent its PUT
    runtime, seen = DockerRuntime(), {}

    def succeeded() -> bool:
        """Also notes when the server itself first answers its health route (its own start-up, not ours)."""
        if "answered" not in seen:
            found = runtime.list({"amlemu.role": "model-server", "amlemu.endpoint": name})
            with contextlib.suppress(httpx.HTTPError):
                if found and found[0].ip and httpx.get(f"http://{found[0].ip}:5001/", timeout=0.2, headers={
                        model_server.KEY_HEADER: model_server.server_key(secret, found[0].labels["amlemu.deployment-id"])
                        }).status_code == 200:
                    seen["answered"] = time.time()
        if ml.online_deployments.get(name="blue", endpoint_name=name).provisioning_state != "Succeeded":
            return False
        seen["succeeded"] = time.time()
        return True

    wait_until(succeeded, timeout=300, interval=0.02, message=f"deployment {name}/blue to succeed")
    poller.result()
    returned = time.time()
    endpoint.traffic = {"blue": 100}
    ml.online_endpoints.begin_create_or_update(endpoint).result()
    key = ml.online_endpoints.get_keys(name).primary_key
    (server,) = runtime.list({"amlemu.role": "model-server", "amlemu.endpoint": name})
    started = runtime.find(server.id).started_at.timestamp()  # docker inspect's State.StartedAt
    answered = seen.get("answered", seen["succeeded"])
    ready = {"create_to_succeeded_s": seen["succeeded"] - created, "create_to_start_s": started - created,
             "start_to_answer_s": answered - started, "start_to_succeeded_s": seen["succeeded"] - started,
             "sdk_result_s": returned - created}
    direct_key = {model_server.KEY_HEADER: model_server.server_key(secret, server.labels["amlemu.deployment-id"])}
    return endpoint.scoring_uri, key, f"http://{server.ip}:5001/score", direct_key, ready


async def latencies(client: httpx.AsyncClient, url: str, headers: dict, count: int) -> list[float]:
    result = []
    for _ in range(count):
        started = time.perf_counter()
        response = await client.post(url, json=BODY, headers=headers)
        result.append(time.perf_counter() - started)
        response.raise_for_status()
    return result


async def throughput(client: httpx.AsyncClient, url: str, headers: dict, count: int, concurrency: int) -> float:
    remaining = iter(range(count))

    async def worker() -> None:
        for _ in remaining:
            (await client.post(url, json=BODY, headers=headers)).raise_for_status()
    started = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return count / (time.perf_counter() - started)


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def measure(uri: str, key: str, direct: str, direct_headers: dict, requests: int, concurrency: int) -> dict:
    auth = {"Authorization": f"Bearer {key}"}
    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    async with httpx.AsyncClient(timeout=30, limits=limits) as client:
        await latencies(client, uri, auth, 200)  # warm: connections, the server's first requests
        await latencies(client, direct, direct_headers, 200)
        via, straight = [], []
        for _ in range(max(1, requests // BLOCK)):
            via += await latencies(client, uri, auth, BLOCK)
            straight += await latencies(client, direct, direct_headers, BLOCK)
        rates: dict[str, list[float]] = {"via": [], "straight": []}
        for _ in range(ROUNDS):  # alternating rounds as well: a shared machine's load shifts over a minute
            rates["straight"].append(await throughput(client, direct, direct_headers, requests // ROUNDS,
                                                      concurrency))
            rates["via"].append(await throughput(client, uri, auth, requests // ROUNDS, concurrency))
        rps_straight, rps_via = statistics.median(rates["straight"]), statistics.median(rates["via"])
    ms = 1000.0
    return {"requests": requests, "concurrency": concurrency,
            "endpoint": {"p50_ms": percentile(via, 0.5) * ms, "p99_ms": percentile(via, 0.99) * ms,
                         "mean_ms": statistics.fmean(via) * ms, "rps": rps_via},
            "direct": {"p50_ms": percentile(straight, 0.5) * ms, "p99_ms": percentile(straight, 0.99) * ms,
                       "mean_ms": statistics.fmean(straight) * ms, "rps": rps_straight}}


def verdicts(report: dict) -> dict:
    added = report["endpoint"]["p50_ms"] - report["direct"]["p50_ms"]
    ratio = report["endpoint"]["rps"] / report["direct"]["rps"]
    return {"added_p50_ms": added, "added_p99_ms": report["endpoint"]["p99_ms"] - report["direct"]["p99_ms"],
            "throughput_ratio": ratio, "latency_pass": added <= 2.0, "throughput_pass": ratio >= 0.9,
            "ready_pass": report["deployment"]["start_to_succeeded_s"] <= READY_TARGET_S}


def rows(report: dict) -> list[tuple[str, str, str, str, str]]:
    v, e, d = report["verdicts"], report["endpoint"], report["direct"]
    return [("latency p50", f"{e['p50_ms']:.2f} ms", f"{d['p50_ms']:.2f} ms", f"{v['added_p50_ms']:+.2f} ms ≤ 2 ms",
             "pass" if v["latency_pass"] else "**fail**"),
            ("latency p99", f"{e['p99_ms']:.2f} ms", f"{d['p99_ms']:.2f} ms", f"{v['added_p99_ms']:+.2f} ms", ""),
            (f"throughput ({report['concurrency']} at a time)", f"{e['rps']:.0f} req/s", f"{d['rps']:.0f} req/s",
             f"{v['throughput_ratio']:.2f}× ≥ 0.9×", "pass" if v["throughput_pass"] else "**fail**")]


def ready_row(report: dict) -> tuple[str, ...]:
    r, v = report["deployment"], report["verdicts"]
    return (f"{r['create_to_succeeded_s']:.2f} s", f"{r['create_to_start_s']:.2f} s",
            f"{r['start_to_answer_s']:.2f} s", f"{r['start_to_succeeded_s']:.2f} s ≤ {READY_TARGET_S:g} s",
            f"{r['sdk_result_s']:.2f} s", "pass" if v["ready_pass"] else "**fail**")


def write_markdown(report: dict, path: Path) -> None:
    m = report["machine"]
    lines = [SECTION, "", "`make bench-scoring` (`bench/scoring.py`): one instance of a deployment that echoes its "
             "input, called through the endpoint's scoring URL (key check, traffic split, router) and directly on "
             f"its inference server, {report['requests']} sequential requests each way in alternating blocks, "
             f"then {report['requests']} each way at {report['concurrency']} at a time in {ROUNDS} alternating rounds "
             f"(the median round); figures in `bench/scoring.json` ({m['cpus']} × {m['cpu']}, {m['date']}, load "
             f"average {report['load'][0]:.2f} before and {report['load'][1]:.2f} after, on a machine shared with "
             "other work).", "",
             "| measurement | through the endpoint | direct to the container | added | result |",
             "| --- | --- | --- | --- | --- |"]
    lines += [f"| {' | '.join(row)} |" for row in rows(report)]
    lines += ["", "Before that, the deployment itself, made with Azure's default probes (readiness and liveness: 10 s "
              "initial delay, every 10 s), timed from the SDK's create (its PUT sent) and from its container's own "
              "start (docker inspect's `State.StartedAt`) to `Succeeded` as `online_deployments.get` shows it, and to "
              "the inference server's first answer on its health route (polled from here: the server's own start-up, "
              "which the emulator cannot shorten):", "",
              "| create → `Succeeded` | create → container started | started → server answers "
              "| started → `Succeeded` | create → the SDK's `result()` returns | result |",
              "| --- | --- | --- | --- | --- | --- |", f"| {' | '.join(ready_row(report))} |"]
    replace_section(path, SECTION, lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--out", type=Path, default=HERE)
    args = parser.parse_args()
    from azure.ai.ml import MLClient
    from azure.identity import DefaultAzureCredential

    load_before = os.getloadavg()[0]
    with own_stack(HERE / "logs" / "scoring") as stack:
        if not stack.wait_healthy(timeout=60, check=stack.scoring_healthy):
            raise SystemExit("the scoring router did not answer")
        ml = MLClient(DefaultAzureCredential(), stack.subscription, stack.resource_group, stack.workspace)
        with tempfile.TemporaryDirectory() as workdir:
            uri, key, direct, direct_headers, ready = deploy(ml, Path(workdir),
                                                             tokens.load_secret(stack.home / "token.key"))
        console.print(f"measuring {uri} against {direct}")
        report = asyncio.run(measure(uri, key, direct, direct_headers, args.requests, args.concurrency))
    report["deployment"] = ready
    report["verdicts"], report["machine"] = verdicts(report), machine()
    report["load"] = [load_before, os.getloadavg()[0]]
    (args.out / "scoring.json").write_text(json.dumps(report, indent=2) + "\n")
    write_markdown(report, args.out / "RESULTS.md")
    for row in rows(report):
        console.print(" | ".join(row))
    console.print("deployment: create → Succeeded | create → container started | started → server answers | "
                  "started → Succeeded | SDK result() | result")
    console.print(" | ".join(ready_row(report)))


if __name__ == "__main__":
    main()
