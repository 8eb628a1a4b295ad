"""What the Studio's job page reads besides the store: a job's files in the blob tree, and its MLflow run (metrics
by step, parameters). MLflow stays the one truth of metrics (as for sweeps, services/trial_metrics.py); when it does
not answer the page says so rather than fail."""

import logging
import os
from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from emulator import confined
from emulator.domain.jobs import tracking
from emulator.errors import EmulatorError
from emulator.store.db import Store
from emulator.store.tables import Job
from emulator.tracking.mlflow_server import MlflowServer

log = logging.getLogger("amlemu.api")
MAX_FILES = 500  # a job that writes thousands of files shows the first ones: the page stays small
MAX_METRICS = 12
ENDED_KEPT = 256


@dataclass(frozen=True)
class RunData:
    metrics: dict[str, list[tuple[int, float]]] = field(default_factory=dict)  # metric -> (step, value)s
    params: dict[str, str] = field(default_factory=dict)
    unavailable: str | None = None  # why MLflow could not be read


class StudioRuns:
    def __init__(self, data_dir: Path, store: Store, server: MlflowServer):
        self.data_dir, self.store, self.server = data_dir, store, server
        # An ended job's run, read once: an open page asks again every second, MLflow need not answer each time.
        self.ended: OrderedDict[tuple[str, str | None], RunData] = OrderedDict()

    def files(self, folder: str) -> list[str]:
        """The files under a job's artifact folder (relative, '/'-separated), sorted; links are not followed."""
        try:
            root = confined.source(self.data_dir, folder)
        except EmulatorError:
            return []
        found: list[str] = []
        for base, dirs, names in os.walk(root):
            dirs.sort()
            found += [os.path.relpath(os.path.join(base, n), root).replace(os.sep, "/") for n in sorted(names)
                      if not os.path.islink(os.path.join(base, n))]
            if len(found) >= MAX_FILES:
                break
        return found[:MAX_FILES]

    def run_data(self, job: Job, first: str | None = None) -> RunData:
        """Its MLflow params and metrics (the first MAX_METRICS by name, `first` among them if it was logged)."""
        if job.ended_at is not None and (job.key, first) in self.ended:
            return self.ended[job.key, first]
        found = self._run_data(job, first)
        if job.ended_at is not None and found.unavailable is None:
            self.ended[job.key, first] = found
            while len(self.ended) > ENDED_KEPT:
                self.ended.popitem(last=False)
        return found

    def _run_data(self, job: Job, first: str | None) -> RunData:
        with self.store.reading() as repo:
            run = repo.tracked_run(job.key)
        if run is None:  # its MLflow run is made when the job first logs
            return RunData()
        space = tracking.mlflow_workspace(run.workspace_key)
        try:
            data = self.server.run_data(space, run.run_id)
            keys = sorted({m["key"] for m in data.get("metrics", [])}, key=lambda k: (k != first, k))[:MAX_METRICS]
            return RunData({key: self.server.metric_points(space, run.run_id, key) for key in keys},
                           {p["key"]: p.get("value", "") for p in data.get("params", [])})
        except EmulatorError as exc:
            log.warning("the Studio could not read the MLflow run of %s: %s", job.name, exc.message)
            return RunData(unavailable=exc.message)

    def best(self, trials: Iterable[Job], metric: str, goal: str) -> dict[str, float | None]:
        """A sweep's trials: the best value each logged of the objective (None: none logged, or unreadable)."""
        pick = min if goal.lower() == "minimize" else max
        found: dict[str, float | None] = {}
        for trial in trials:
            values = [v for _, v in self.run_data(trial, metric).metrics.get(metric, [])]
            found[trial.name] = pick(values) if values else None
        return found
