"""The scoring router's own Prometheus metrics, per endpoint and deployment: requests, their latency, errors.

The router is a process of its own that answers every scoring request itself: it counts them in memory with
prometheus_client and serves them on its own `/metrics` (on 127.0.0.1 only, where it listens, and asking for the
management token as the api's /metrics does). Pushing counts through Redis or the store would put a write on every
request's path for no more truth; a restart of the router starts its counters again, which Prometheus' rate()
takes in its stride, as it does for any process."""

import time

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Histogram, generate_latest

# Latency of a model server's answer through the router: from a millisecond to its longest request timeout.
LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 90.0)


class ScoringMetrics:
    content_type = CONTENT_TYPE_LATEST

    def __init__(self):
        self.registry = CollectorRegistry(auto_describe=True)
        labels = ["endpoint", "deployment"]
        self.requests = Counter("amlemu_scoring_requests", "Scoring requests routed to a deployment, by answer.",
                                [*labels, "code"], registry=self.registry)
        self.latency = Histogram("amlemu_scoring_request_duration_seconds", "From routing a scoring request to its "
                                 "answer.", labels, buckets=LATENCY_BUCKETS, registry=self.registry)
        self.errors = Counter("amlemu_scoring_errors", "Scoring requests a deployment failed (5xx, timeouts, no "
                              "instance answering).", labels, registry=self.registry)

    def observe(self, endpoint: str, deployment: str, status: int, started: float) -> None:
        self.requests.labels(endpoint, deployment, str(status)).inc()
        self.latency.labels(endpoint, deployment).observe(max(time.monotonic() - started, 0.0))
        if status >= 500 or status == 408:
            self.errors.labels(endpoint, deployment).inc()

    def exposition(self) -> bytes:
        return generate_latest(self.registry)
