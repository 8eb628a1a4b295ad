"""Parent jobs (sweeps): each pass, every live parent's driver decides on its children and the parent's status
rolls up from theirs (services/parents.py; the rules are domain/jobs/children.py's).

The metric values drivers decide on are read from MLflow first, outside any transaction (a slow tracking server
holds up no writer); then one transaction makes the children decided and records the decision with them, so a
controller killed at any moment never makes a child twice nor loses one; the lines the decisions said are appended
to each parent's log once committed (at worst a line is lost to a crash, never a child).
"""

import logging
from collections.abc import Callable, Iterable, Mapping
from datetime import datetime

from emulator import confined
from emulator.controller.steps import Steps
from emulator.domain.ids import WorkspaceRef
from emulator.domain.jobs import artifacts, children
from emulator.services import parents
from emulator.settings import Settings
from emulator.store.db import Store

log = logging.getLogger("amlemu.controller")
Metrics = Callable[[Iterable[str], str], Mapping[str, list[float]]]  # (job keys, metric) -> values by job key


class ParentReconciler:
    def __init__(self, settings: Settings, store: Store, clock: Callable[[], datetime], metrics: Metrics,
                 drivers: Mapping[str, parents.Driver]):
        self.settings, self.store, self.clock, self.metrics, self.drivers = settings, store, clock, metrics, drivers
        self.steps = Steps()

    def _driver(self, job) -> parents.Driver | None:
        return self.drivers.get((job.driver or {}).get("kind"))

    def _series(self) -> dict[str, Mapping[str, list[float]]] | None:
        """The metric values the live parents' drivers need; None when no parent is live (no write to take)."""
        with self.store.reading() as repo:
            live = repo.parents_in(children.LIVE_PARENT)
            wanted = {job.key: want for job in live if (driver := self._driver(job)) is not None
                      and (want := driver.wanted(job, repo.children(job.key))) is not None}
        if not live:
            return None
        return {key: self.metrics(keys, metric) for key, (metric, keys) in wanted.items()}

    def tick(self) -> None:
        series = self._series()
        if series is None:
            return
        said: list[tuple[str, str, str, list[str]]] = []
        with self.store.transaction() as repo:
            now = self.clock()
            for job in repo.parents_in(children.LIVE_PARENT):
                driver, plans = self._driver(job), []
                if driver is not None:
                    self.steps.run(f"parent job {job.name}", self._one, repo, job, driver, series, now, plans)
                if plans and plans[0].said:
                    said.append((job.workspace_key, job.name, driver.log_name, plans[0].said))
        for workspace_key, name, log_name, lines in said:
            self._log(workspace_key, name, log_name, lines)

    def _one(self, repo, job, driver: parents.Driver, series, now: datetime, plans: list) -> None:
        with repo.session.begin_nested():  # a parent whose pass raises undoes its own changes only
            plans.append(parents.drive(repo, job, driver, series.get(job.key, {}), now, self.settings.data_dir))

    def _log(self, workspace_key: str, name: str, log_name: str, lines: list[str]) -> None:
        where = f"{artifacts.directory(WorkspaceRef.from_key(workspace_key), name)}/{log_name}"
        with confined.appending(self.settings.data_dir, where, mode=0o644) as out:
            out.write("".join(line + "\n" for line in lines))
