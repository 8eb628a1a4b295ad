"""Prometheus metrics of the platform, computed from the store at each scrape (a custom Collector keeps no state
that could go stale, and the api process holds none of the controller's counters): nodes, jobs, queues,
preemptions, job durations, image builds and the cost meter. Scoring metrics are the scoring router's own."""

from collections.abc import Callable, Iterator
from datetime import datetime

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.registry import Collector

from emulator.domain import events as kinds
from emulator.domain.compute.cluster import NodeState
from emulator.domain.jobs.status import JobStatus
from emulator.services import cost
from emulator.store.db import Store
from emulator.store.repositories import Repository

# Job durations from seconds to hours: emulated jobs are short, rehearsals of real ones are not.
DURATION_BUCKETS = (1.0, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 600.0, 1800.0, 3600.0, 4 * 3600.0)


def _name(key: str) -> str:
    return key.rsplit("/", 1)[-1]


def histogram(values: list[float], buckets: tuple[float, ...]) -> tuple[list[tuple[str, float]], float]:
    """Cumulative buckets (Prometheus' `le`, +Inf last) and the sum."""
    counts = [(repr(bound), float(sum(v <= bound for v in values))) for bound in buckets]
    return [*counts, ("+Inf", float(len(values)))], float(sum(values))


class StoreCollector(Collector):
    def __init__(self, store: Store, clock: Callable[[], datetime]):
        self.store, self.clock = store, clock

    def collect(self) -> Iterator[Metric]:
        with self.store.reading() as repo:
            now = self.clock()
            workspaces = {w.key: w.name for w in repo.all_workspaces()}
            yield from self._nodes(repo, workspaces)
            yield from self._jobs(repo, workspaces, now)
            yield from self._events(repo, workspaces)
            yield from self._cost(repo, now)

    @staticmethod
    def _nodes(repo: Repository, workspaces: dict[str, str]) -> Iterator[Metric]:
        nodes = GaugeMetricFamily("amlemu_nodes", "Nodes of each compute cluster, by state.",
                                  labels=["workspace", "cluster", "state"])
        for compute in repo.computes():
            if compute.compute_type != "AmlCompute":
                continue
            states = [n.state for n in repo.nodes(compute.key)]
            for state in NodeState:
                nodes.add_metric([workspaces.get(compute.workspace_key, ""), compute.name, state.value],
                                 states.count(state.value))
        yield nodes

    @staticmethod
    def _jobs(repo: Repository, workspaces: dict[str, str], now: datetime) -> Iterator[Metric]:
        jobs = GaugeMetricFamily("amlemu_jobs", "Jobs by status.", labels=["workspace", "status"])
        depth = GaugeMetricFamily("amlemu_queue_depth", "Jobs Queued on each compute.",
                                  labels=["workspace", "compute"])
        wait = GaugeMetricFamily("amlemu_queue_oldest_wait_seconds",
                                 "How long the oldest Queued job of each compute has waited.",
                                 labels=["workspace", "compute"])
        by_status: dict[tuple[str, str], int] = {}
        for workspace_key, compute_key, status, count, queued_at in repo.job_counts():
            workspace = workspaces.get(workspace_key, "")
            by_status[(workspace, status)] = by_status.get((workspace, status), 0) + count
            if status == JobStatus.QUEUED.value:
                depth.add_metric([workspace, _name(compute_key)], count)
                wait.add_metric([workspace, _name(compute_key)],
                                max((now - queued_at).total_seconds(), 0.0) if queued_at else 0.0)
        for (workspace, status), count in sorted(by_status.items()):
            jobs.add_metric([workspace, status], count)
        durations = HistogramMetricFamily("amlemu_job_duration_seconds",
                                          "From Running to the end, of jobs that ran and ended.",
                                          labels=["workspace", "compute", "status"])
        ended: dict[tuple[str, str, str], list[float]] = {}
        for job in repo.ended_jobs():
            labels = (workspaces.get(job.workspace_key, ""), _name(job.compute_key), job.status)
            ended.setdefault(labels, []).append((job.ended_at - job.started_at).total_seconds())
        for labels, values in sorted(ended.items()):
            buckets, total = histogram(values, DURATION_BUCKETS)
            durations.add_metric(list(labels), buckets, total)
        yield from (jobs, depth, wait, durations)

    @staticmethod
    def _events(repo: Repository, workspaces: dict[str, str]) -> Iterator[Metric]:
        preempted = CounterMetricFamily("amlemu_preemptions", "Low-priority nodes taken by a preemption.",
                                        labels=["workspace", "cluster"])
        for workspace_key, subject, count in repo.event_counts(kinds.NODE_PREEMPTED):
            preempted.add_metric([workspaces.get(workspace_key, ""), _name(subject)], count)
        builds = CounterMetricFamily("amlemu_image_builds", "Environment images built for jobs.",
                                     labels=["workspace"])
        built: dict[str, int] = {}
        for workspace_key, _subject, count in repo.event_counts(kinds.IMAGE_BUILT):
            built[workspace_key] = built.get(workspace_key, 0) + count
        for workspace_key, count in sorted(built.items()):
            builds.add_metric([workspaces.get(workspace_key, "")], count)
        yield from (preempted, builds)

    @staticmethod
    def _cost(repo: Repository, now: datetime) -> Iterator[Metric]:
        dollars = CounterMetricFamily("amlemu_cost_dollars", "What the same VMs would have cost in Azure, in USD "
                                      "(retail prices of the workspace's region; see `amlemu cost`).",
                                      labels=["workspace", "compute", "kind", "vm_size", "priority"])
        seconds = CounterMetricFamily("amlemu_vm_seconds", "VM-seconds metered: nodes of clusters, compute "
                                      "instances while running, instances of deployments.",
                                      labels=["workspace", "compute", "kind"])
        for workspace in repo.all_workspaces():
            for line in cost.report(repo, workspace, None, now).lines:
                dollars.add_metric([workspace.name, line.name, line.kind, line.vm_size, line.priority], line.dollars)
                seconds.add_metric([workspace.name, line.name, line.kind], line.seconds)
        yield from (dollars, seconds)


class Metrics:
    """The api's /metrics: one registry holding the store collector."""
    content_type = CONTENT_TYPE_LATEST

    def __init__(self, store: Store, clock: Callable[[], datetime]):
        self.registry = CollectorRegistry(auto_describe=False)
        self.registry.register(StoreCollector(store, clock))

    def exposition(self) -> bytes:
        return generate_latest(self.registry)
