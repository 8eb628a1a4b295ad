"""Each deployment's recent traffic, as the Studio's online endpoint page shows it: requests per second, latency
(median, 95th percentile, mean) and errors over the last WINDOW_SECONDS, from two reads of the scoring router's own
Prometheus counters, computed as Prometheus' rate() and histogram_quantile() would (so the page and the Grafana
dashboard agree). The router writes the summary (scoring/traffic.py); the Studio reads it."""

import math
from dataclasses import dataclass

WINDOW_SECONDS = 10.0
STALE_SECONDS = 5.0  # a summary older than this: the router is not running (or stuck), its numbers stopped


@dataclass(frozen=True)
class Counts:
    """One deployment's counters at a moment: requests, errors, latency histogram (upper bound -> cumulative)."""
    requests: float = 0.0
    errors: float = 0.0
    seconds: float = 0.0  # the latencies' sum
    buckets: tuple[tuple[float, float], ...] = ()


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


def of_endpoint(summary: dict | None, endpoint: str, now: float) -> dict[str, dict] | None:
    """Deployment -> its recent traffic, for one endpoint, from the router's summary (its wall-clock `written`);
    None when there is none, or it is stale."""
    if not isinstance(summary, dict) or now - summary.get("written", 0.0) > STALE_SECONDS:
        return None
    prefix = f"{endpoint.lower()}/"
    return {key[len(prefix):]: figures for key, figures in summary.get("deployments", {}).items()
            if key.lower().startswith(prefix)}
