"""The metric values child jobs logged, read from the MLflow server for the controller (services/sweep_driver.py
decides on them). The controller reads them itself, before its transaction, rather than the api recording them as
they are logged: MLflow stays the one truth of metrics, nothing is written on the path every logged metric takes,
and a decision reads what was logged up to that moment."""

import logging
from collections.abc import Iterable

from emulator.domain.jobs import tracking
from emulator.errors import RuntimeUnavailable
from emulator.store.db import Store
from emulator.tracking.mlflow_server import MlflowServer

log = logging.getLogger("amlemu.controller")


class TrialMetrics:
    def __init__(self, store: Store, server: MlflowServer):
        self.store, self.server = store, server

    def series(self, job_keys: Iterable[str], metric: str) -> dict[str, list[float]]:
        """{job key: its values of `metric`}; a job that never logged has none ([]); a job whose values could not
        be read (MLflow down) is left out, to be read on a later pass."""
        with self.store.reading() as repo:
            runs = {key: repo.tracked_run(key) for key in job_keys}
        found = {}
        for key, run in runs.items():
            if run is None:  # its MLflow run is made when the job first logs
                found[key] = []
                continue
            try:
                found[key] = self.server.metric_history(tracking.mlflow_workspace(run.workspace_key), run.run_id,
                                                        metric)
            except RuntimeUnavailable as exc:
                log.warning("metric %s of %s not read this pass: %s", metric, key, exc.message)
        return found
