"""Jobs reach the api (their MLflow tracking and artifact uploads) on the jobs network, under the name `api`: the
controller joins the api's container to that network, as a compose file cannot join a network it does not own.
On that network the api takes a job's run token for its own workspace's tracking only (services/facade/tracking.py)."""

import logging
from datetime import datetime, timedelta

from emulator.errors import RuntimeUnavailable
from emulator.runtime import labels
from emulator.runtime.base import Containers, Networks
from emulator.settings import Settings

log = logging.getLogger("amlemu.controller")
RECHECK = timedelta(seconds=5)  # a recreated api container (a new id) is joined within this


class ApiReach:
    def __init__(self, settings: Settings, containers: Containers, networks: Networks):
        self.settings, self.containers, self.networks = settings, containers, networks
        self.joined: set[str] = set()  # api containers already on the jobs network
        self.checked: datetime | None = None

    def tick(self, now: datetime) -> None:
        if self.checked is not None and now - self.checked < RECHECK:
            return
        self.checked = now
        wanted = {labels.STACK: self.settings.stack, labels.SERVICE: "api"}
        for api in self.containers.list(wanted, managed=False):  # compose started it: it is not the emulator's
            if not api.running or api.id in self.joined:
                continue
            try:
                self.networks.ensure_network(self.settings.jobs_network, {labels.STACK: self.settings.stack})
                self.networks.join_network(api.id, self.settings.jobs_network, self.settings.jobs_api_host)
            except RuntimeUnavailable as exc:
                log.warning("the api cannot join the jobs network yet: %s", exc.message)
                continue
            self.joined.add(api.id)
            log.info("api %s joined %s as %s", api.name, self.settings.jobs_network, self.settings.jobs_api_host)
