"""The timeline's housekeeping, every `meter_interval_seconds`: old events beyond `events_keep` go, budgets crossed
since the last look get their `budget.exceeded` event, and the token Prometheus scrapes /metrics with is kept fresh
with a copy of the api's CA certificate beside it: their own folder of the data folder, which alone the compose
profile's Prometheus mounts, read-only. The folder is made as the controller starts, before anything mounts it."""

import logging
from collections.abc import Callable
from datetime import datetime

from emulator import tokens
from emulator.services import cost
from emulator.settings import Settings
from emulator.store.db import Store

log = logging.getLogger("amlemu.controller")
FOLDER = "metrics"
TOKEN_FILE = f"{FOLDER}/token"
CA_FILE = f"{FOLDER}/ca.pem"
TOKEN_RENEW_SECONDS = 3600.0  # tokens live 24 h: renewed well before


class Meter:
    def __init__(self, settings: Settings, store: Store, clock: Callable[[], datetime], secret: bytes):
        self.settings, self.store, self.clock, self.secret = settings, store, clock, secret
        self.last: datetime | None = None
        self.token_at: datetime | None = None
        (settings.data_dir / FOLDER).mkdir(parents=True, exist_ok=True)

    def tick(self) -> None:
        now = self.clock()
        if self.last is not None and (now - self.last).total_seconds() < self.settings.meter_interval_seconds:
            return
        self.last = now
        with self.store.reading() as repo:  # a read first: no write lock every few seconds for nothing
            due = repo.events_to_prune(self.settings.events_keep) or any(
                w.budget and not w.budget.get("exceededAt") for w in repo.all_workspaces())
        if due:
            self._write(now)
        if self.token_at is None or (now - self.token_at).total_seconds() >= TOKEN_RENEW_SECONDS:
            self._write_token(now)
        ca, copy = self.settings.ca_dir / "ca.crt", self.settings.data_dir / CA_FILE
        if ca.is_file() and (not copy.is_file() or copy.read_text() != ca.read_text()):  # made by the api's first start
            _replace(copy, ca.read_text(), 0o644)

    def _write(self, now: datetime) -> None:
        with self.store.transaction() as repo:
            pruned = repo.prune_events(self.settings.events_keep)
            for name in cost.check_budgets(repo, now):
                log.warning("workspace %s is over its budget", name)
        if pruned:
            log.info("pruned %d old events (keeping %d)", pruned, self.settings.events_keep)

    def _write_token(self, now: datetime) -> None:
        audience = tokens.management_audiences(self.settings.own_urls)[0]
        token, _ = tokens.issue(self.secret, audience, now.timestamp())
        _replace(self.settings.data_dir / TOKEN_FILE, token, 0o600)
        self.token_at = now


def _replace(path, text: str, mode: int) -> None:
    """Whole or not at all: Prometheus rereads the token at each scrape."""
    temporary = path.with_name(f".{path.name}.new")
    temporary.unlink(missing_ok=True)
    temporary.touch(mode=mode)
    temporary.write_text(text)
    temporary.replace(path)
