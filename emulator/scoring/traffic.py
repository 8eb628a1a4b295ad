"""Each deployment's recent traffic, as the Studio's online endpoint page shows it: requests per second, latency
(median, 95th percentile, mean) and errors over the last WINDOW_SECONDS, from the router's own Prometheus counters.

Why a file the router writes, not a scrape of its /metrics by the api: the router listens on the host's loopback
(compose runs it on the host's network), which the api, on the stack's bridge network, cannot reach; both share the
data folder. So once a second the router compares its counters with those of WINDOW_SECONDS ago and writes the
summary (a few hundred bytes, replaced whole). A summary older than STALE_SECONDS means the router is not running:
the page says "no data" rather than show numbers that stopped. The figures are computed as Prometheus' rate() and
histogram_quantile() would from the same counters, so the page and the Grafana dashboard agree."""

import json
import math
import time
from collections import deque
from dataclasses import dataclass
from pathlib import Path

from prometheus_client import CollectorRegistry

WINDOW_SECONDS = 10.0
PUBLISH_SECONDS = 1.0
STALE_SECONDS = 5.0  # five missed writes: the router is gone (or stuck)
FILE = "scoring.traffic.json"  # in the data folder


@dataclass(frozen=True)
class Counts:
    """One deployment's counters at a moment: requests, errors, latency histogram (upper bound -> cumulative)."""
    requests: float = 0.0
    errors: float = 0.0
    seconds: float = 0.0  # the latencies' sum
    buckets: tuple[tuple[float, float], ...] = ()


def read_counts(registry: CollectorRegistry) -> dict[tuple[str, str], Counts]:
    """(endpoint, deployment) -> its counters now, from the router's registry (scoring/metrics.py's names)."""
    found: dict[tuple[str, str], dict] = {}
    for family in registry.collect():
        for sample in family.samples:
            key = (sample.labels.get("endpoint", ""), sample.labels.get("deployment", ""))
            entry = found.setdefault(key, {"requests": 0.0, "errors": 0.0, "seconds": 0.0, "buckets": []})
            if sample.name == "amlemu_scoring_requests_total":
                entry["requests"] += sample.value
            elif sample.name == "amlemu_scoring_errors_total":
                entry["errors"] += sample.value
            elif sample.name == "amlemu_scoring_request_duration_seconds_sum":
                entry["seconds"] = sample.value
            elif sample.name == "amlemu_scoring_request_duration_seconds_bucket":
                entry["buckets"].append((float(sample.labels["le"]), sample.value))
    return {key: Counts(e["requests"], e["errors"], e["seconds"], tuple(sorted(e["buckets"])))
            for key, e in found.items()}


def quantile(q: float, buckets: list[tuple[float, float]]) -> float | None:
    """As histogram_quantile(): the bucket the q-th observation falls in, linearly within it; the highest finite
    bound for one past it. `buckets`: (upper bound, cumulative count), ascending, ending with +Inf."""
    total = buckets[-1][1] if buckets else 0.0
    if total <= 0:
        return None
    rank, lower, below = q * total, 0.0, 0.0
    for upper, count in buckets:
        if count >= rank:
            if math.isinf(upper):
                return lower
            return lower + (upper - lower) * ((rank - below) / (count - below) if count > below else 1.0)
        lower, below = upper, count
    return lower


def summarize(old: Counts, new: Counts, seconds: float) -> dict:
    """What changed between two reads `seconds` apart (a restarted router's counters start again: from zero)."""
    if new.requests < old.requests:
        old = Counts()
    requests = new.requests - old.requests
    previous = dict(old.buckets)
    buckets = [(upper, count - previous.get(upper, 0.0)) for upper, count in new.buckets]
    return {"requestsPerSecond": round(requests / seconds, 3) if seconds > 0 else 0.0,
            "p50Seconds": quantile(0.5, buckets), "p95Seconds": quantile(0.95, buckets),
            "meanSeconds": (new.seconds - old.seconds) / requests if requests else None,
            "errors": int(new.errors - old.errors), "requests": int(requests),
            "requestsTotal": int(new.requests), "errorsTotal": int(new.errors)}


class Publisher:
    """The router's side: reads its counters once a second, keeps those of the last WINDOW_SECONDS, writes the
    summary to the data folder."""

    def __init__(self, registry: CollectorRegistry, data_dir: Path, clock=time.monotonic, wall=time.time):
        self.registry, self.path, self.clock, self.wall = registry, data_dir / FILE, clock, wall
        self.reads: deque[tuple[float, dict[tuple[str, str], Counts]]] = deque()

    def summary(self) -> dict:
        now = self.clock()
        self.reads.append((now, read_counts(self.registry)))
        while len(self.reads) > 1 and now - self.reads[1][0] >= WINDOW_SECONDS:
            self.reads.popleft()
        then, old = self.reads[0]
        deployments = {f"{endpoint}/{deployment}": summarize(old.get((endpoint, deployment), Counts()), new, now - then)
                       for (endpoint, deployment), new in self.reads[-1][1].items()}
        return {"written": self.wall(), "windowSeconds": round(now - then, 3), "deployments": deployments}

    def publish(self) -> None:
        temporary = self.path.with_name(f".{FILE}.new")
        temporary.write_text(json.dumps(self.summary()))
        temporary.replace(self.path)  # whole or not at all: the api reads it at any moment


def deployments_of(data_dir: Path, endpoint: str, now: float | None = None) -> dict[str, dict] | None:
    """The api's side: deployment -> its recent traffic, for one endpoint; None when the router publishes none (it is
    not running, or has not yet written)."""
    try:
        summary = json.loads((data_dir / FILE).read_text())
    except (OSError, ValueError):
        return None
    if (now if now is not None else time.time()) - summary.get("written", 0.0) > STALE_SECONDS:
        return None
    prefix = f"{endpoint.lower()}/"
    return {key[len(prefix):]: figures for key, figures in summary.get("deployments", {}).items()
            if key.lower().startswith(prefix)}
