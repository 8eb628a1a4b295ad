"""The controller process: one reconcile loop over every cluster, at a fixed interval."""

import logging
import signal
import threading
from datetime import UTC, datetime

import redis

from emulator.controller.clusters import ClusterReconciler
from emulator.runtime.docker import DockerRuntime
from emulator.settings import Settings
from emulator.store.db import Store

log = logging.getLogger("amlemu.controller")


def run(settings: Settings) -> None:
    stopping = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stopping.set())
    reconciler = ClusterReconciler(settings, Store(settings.db_url), DockerRuntime(),
                                   redis.Redis.from_url(settings.redis_url), lambda: datetime.now(UTC))
    log.info("controller started (stack %s, interval %.2fs, time scale %g)", settings.stack,
             settings.reconcile_interval_seconds, settings.time_scale)
    alive = settings.data_dir / "controller.alive"
    alive.unlink(missing_ok=True)
    while not stopping.is_set():
        try:
            reconciler.tick()
            alive.touch()  # the compose healthcheck reads its age
        except Exception:  # a failed pass is retried on the next one; the loop itself never dies
            log.exception("reconcile pass failed")
        stopping.wait(settings.reconcile_interval_seconds)
    log.info("controller stopped")
