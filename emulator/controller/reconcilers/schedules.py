"""Job schedules: each pass, the jobs of the occurrences that fell due (services/schedules.py decides, on the
schedule's calendar, which the time scale runs faster). A job and the record that its occurrence fired commit
together, so a controller killed at any moment never fires an occurrence twice nor loses one it committed."""

import logging
from collections.abc import Callable
from datetime import datetime

from emulator.services import schedules
from emulator.settings import Settings
from emulator.store.db import Store

log = logging.getLogger("amlemu.controller")


class ScheduleReconciler:
    def __init__(self, settings: Settings, store: Store, clock: Callable[[], datetime]):
        self.settings, self.store, self.clock = settings, store, clock

    def tick(self) -> list[schedules.Fired]:
        with self.store.transaction() as repo:
            fired = schedules.fire_due(repo, self.clock(), self.settings.time_scale, self.settings.data_dir)
        for each in fired:
            if each.job:
                log.info("schedule %s: job %s for %s", each.schedule, each.job, each.occurrence.isoformat())
            else:
                log.warning("schedule %s made no job for %s: %s", each.schedule, each.occurrence.isoformat(),
                            each.error)
        return fired
