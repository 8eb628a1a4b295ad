"""The router's traffic summary for the Studio: rates and quantiles over the last window from its own counters (as
Prometheus' rate() and histogram_quantile() compute them), a restart's counters taken from zero, and the api's side
that says "no data" once the router stops writing."""

import json

import pytest

from emulator.domain.serving import traffic
from emulator.scoring.metrics import ScoringMetrics
from emulator.scoring.traffic import Publisher


def test_quantiles_interpolate_within_a_bucket_as_histogram_quantile_does():
    buckets = [(0.1, 50.0), (0.2, 90.0), (0.5, 100.0), (float("inf"), 100.0)]
    assert traffic.quantile(0.5, buckets) == pytest.approx(0.1)
    assert traffic.quantile(0.7, buckets) == pytest.approx(0.15)
    assert traffic.quantile(0.95, buckets) == pytest.approx(0.35)
    assert traffic.quantile(0.5, [(0.1, 0.0), (float("inf"), 0.0)]) is None
    assert traffic.quantile(0.99, [(0.1, 1.0), (float("inf"), 10.0)]) == 0.1  # past the last bound: that bound


def test_the_summary_covers_the_last_window_per_deployment(tmp_path):
    metrics, now = ScoringMetrics(), [100.0]
    publisher = Publisher(metrics.registry, tmp_path / "t.json", clock=lambda: now[0], wall=lambda: 5000.0)
    metrics.observe("ep", "old", 200, started=0.0)  # before the window: not counted in it
    publisher.publish()
    now[0] = 104.0
    for status, took in ((200, 0.004), (200, 0.004), (200, 0.04), (503, 0.001)):
        metrics.latency.labels("ep", "blue").observe(took)
        metrics.requests.labels("ep", "blue", str(status)).inc()
        if status >= 500:
            metrics.errors.labels("ep", "blue").inc()
    publisher.publish()
    summary = json.loads((tmp_path / "t.json").read_text())
    assert summary["written"] == 5000.0 and summary["windowSeconds"] == 4.0
    blue = summary["deployments"]["ep/blue"]
    assert blue["requestsPerSecond"] == 1.0 and blue["requests"] == 4 and blue["errors"] == 1
    # 1 answer within 1 ms, 2 more within 5 ms, the 4th within 50 ms: the 2nd of 4 halfway into (2.5, 5] ms
    assert blue["p50Seconds"] == pytest.approx(0.00375) and blue["p95Seconds"] == pytest.approx(0.045)
    assert blue["meanSeconds"] == pytest.approx(0.01225)
    old = summary["deployments"]["ep/old"]
    assert old["requests"] == 0 and old["requestsTotal"] == 1 and old["p50Seconds"] is None
    now[0] = 104.0 + traffic.WINDOW_SECONDS + 1  # no request since: the window empties
    assert publisher.summary()["deployments"]["ep/blue"]["requestsPerSecond"] == 0.0


def test_a_restarted_routers_counters_count_from_zero():
    old, new = traffic.Counts(requests=50, errors=3), traffic.Counts(requests=4, errors=1)
    assert traffic.summarize(old, new, 2.0)["requestsPerSecond"] == 2.0


def test_the_studio_reads_one_endpoints_deployments_and_no_data_once_the_router_stops():
    assert traffic.of_endpoint(None, "ep", 1001.0) is None  # never written
    summary = {"written": 1000.0, "deployments": {"ep/blue": {"requestsPerSecond": 2.0},
                                                  "ep-2/blue": {"requestsPerSecond": 9.0}}}
    assert traffic.of_endpoint(summary, "EP", 1001.0) == {"blue": {"requestsPerSecond": 2.0}}
    assert traffic.of_endpoint(summary, "ep", 1000.0 + traffic.STALE_SECONDS + 1) is None
