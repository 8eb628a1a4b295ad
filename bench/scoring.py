"""Scoring through an online endpoint's URL against calling its model container directly, in one run.

Starts a composed stack of its own (bench/run.py's `own_stack`), deploys a one-instance deployment with the
unmodified azure-ai-ml SDK (a tiny scoring script that echoes its input, so the figures are the plumbing's),
then measures, on the same container and with the same client:

1. latency: sequential requests, p50 and p99, through the scoring URL (key check, traffic pick, router hop)
   and straight to the container's inference server on the scoring network; in alternating blocks so that
   drift on a shared machine hits both alike;
2. throughput: a fixed number of requests with a fixed concurrency, requests per second, both ways.

Targets (issue 6): at most 2 ms added at p50, at least 0.9 × the direct throughput. Writes scoring.json and
the "Online endpoint scoring" section of RESULTS.md next to this file.

    .venv/bin/python -m bench.scoring [--requests 2000] [--concurrency 8]      (or: make bench-scoring)
"""

import argparse
import asyncio
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
from emulator.domain import serving  # noqa: E402
from emulator.runtime.docker import DockerRuntime  # noqa: E402

HERE = Path(__file__).resolve().parent
SECTION = "## Online endpoint scoring"
SCORE = "import json\n\ndef init():\n    pass\n\ndef run(raw_data):\n    return json.loads(raw_data)\n"
BODY = {"data": [[1.0, 2.0, 3.0, 4.0]]}
BLOCK = 100  # requests per alternating latency block
ROUNDS = 4  # alternating throughput rounds; the median of each side's
console = Console()


def deploy(ml, workdir: Path, secret: bytes) -> tuple[str, str, str, dict]:
    """(scoring URI, key, the instance's address on the scoring network, the headers it asks of a direct call: the
    deployment's server key, which the router adds to each request it forwards)."""
    from azure.ai.ml.entities import (CodeConfiguration, Environment, ManagedOnlineDeployment, ManagedOnlineEndpoint,
                                      Model, ProbeSettings)

    (workdir / "model").mkdir()
    (workdir / "model" / "weights.txt").write_text("1")
    (workdir / "src").mkdir()
    (workdir / "src" / "score.py").write_text(SCORE)
    name = f"bench-{uuid.uuid4().hex[:6]}"
    model = ml.models.create_or_update(Model(name=f"{name}-model", path=str(workdir / "model")))
    endpoint = ml.online_endpoints.begin_create_or_update(ManagedOnlineEndpoint(name=name, auth_mode="key")).result()
    probe = ProbeSettings(initial_delay=1, period=1)
    ml.online_deployments.begin_create_or_update(ManagedOnlineDeployment(
        name="blue", endpoint_name=name, model=model, instance_type="Standard_DS3_v2", instance_count=1,
        code_configuration=CodeConfiguration(code=str(workdir / "src"), scoring_script="score.py"),
        environment=Environment(image="python:3.11-slim"), readiness_probe=probe, liveness_probe=probe)).result()
    endpoint.traffic = {"blue": 100}
    ml.online_endpoints.begin_create_or_update(endpoint).result()
    key = ml.online_endpoints.get_keys(name).primary_key
    (server,) = DockerRuntime().list({"amlemu.role": "model-server", "amlemu.endpoint": name})
    direct_key = serving.server_key(secret, server.labels["amlemu.deployment-id"])
    return endpoint.scoring_uri, key, f"http://{server.ip}:5001/score", {serving.KEY_HEADER: direct_key}


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
            "throughput_ratio": ratio, "latency_pass": added <= 2.0, "throughput_pass": ratio >= 0.9}


def rows(report: dict) -> list[tuple[str, str, str, str, str]]:
    v, e, d = report["verdicts"], report["endpoint"], report["direct"]
    return [("latency p50", f"{e['p50_ms']:.2f} ms", f"{d['p50_ms']:.2f} ms", f"{v['added_p50_ms']:+.2f} ms ≤ 2 ms",
             "pass" if v["latency_pass"] else "**fail**"),
            ("latency p99", f"{e['p99_ms']:.2f} ms", f"{d['p99_ms']:.2f} ms", f"{v['added_p99_ms']:+.2f} ms", ""),
            (f"throughput ({report['concurrency']} at a time)", f"{e['rps']:.0f} req/s", f"{d['rps']:.0f} req/s",
             f"{v['throughput_ratio']:.2f}× ≥ 0.9×", "pass" if v["throughput_pass"] else "**fail**")]


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
            uri, key, direct, direct_headers = deploy(ml, Path(workdir), tokens.load_secret(stack.home / "token.key"))
        console.print(f"measuring {uri} against {direct}")
        report = asyncio.run(measure(uri, key, direct, direct_headers, args.requests, args.concurrency))
    report["verdicts"], report["machine"] = verdicts(report), machine()
    report["load"] = [load_before, os.getloadavg()[0]]
    (args.out / "scoring.json").write_text(json.dumps(report, indent=2) + "\n")
    write_markdown(report, args.out / "RESULTS.md")
    for row in rows(report):
        console.print(" | ".join(row))


if __name__ == "__main__":
    main()
