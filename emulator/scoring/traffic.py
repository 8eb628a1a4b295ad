"""The scoring router's side of each deployment's recent traffic (domain/serving/traffic.py), for the Studio's online
endpoint page: once a second it reads its own Prometheus counters, compares them with those of WINDOW_SECONDS ago and
writes the summary to the data folder (settings.scoring_traffic, a few hundred bytes, replaced whole).

Why a file, not a scrape of the router's /metrics by the api: the router listens on the host's loopback (compose runs
it on the host's network), which the api, on the stack's bridge network, cannot reach; both share the data folder.
A summary that is not renewed (the router is down) goes stale, and the page says "no data" rather than show numbers
that stopped."""

import json
import time
from collections import deque
from pathlib import Path

from prometheus_client import CollectorRegistry

from emulator.domain.serving.traffic import WINDOW_SECONDS, Counts, summarize

PUBLISH_SECONDS = 1.0


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


class Publisher:
    """Reads the counters at each publish, keeps those of the last WINDOW_SECONDS, writes the summary to `path`."""

    def __init__(self, registry: CollectorRegistry, path: Path, clock=time.monotonic, wall=time.time):
        self.registry, self.path, self.clock, self.wall = registry, path, clock, wall
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
        temporary = self.path.with_name(f".{self.path.name}.new")
        temporary.write_text(json.dumps(self.summary()))
        temporary.replace(self.path)  # whole or not at all: the api reads it at any moment
