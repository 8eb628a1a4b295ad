"""Starts, ahead of time, the containers of jobs sent while every node was busy.

Starting a container costs a third of a second or more; a job sent ahead would otherwise pay it after its node
frees up. The stager lays out the rank and starts its container, which waits at its gate until a node claims
the rank and opens it (dispatch/job_container.py, workers/attempts.py). Whoever takes the rank's stage key first,
the stager or the claiming node, does the work; the other adopts it, so nothing is started twice.
"""

import logging
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import redis

from emulator.dispatch import job_container, protocol
from emulator.dispatch.protocol import Attempt
from emulator.runtime.base import Containers

log = logging.getLogger("amlemu.controller")


class Stager:
    def __init__(self, runtime: Containers, broker: redis.Redis, data_dir: Path, host_data_dir: Path, workers: int = 4):
        self.runtime, self.broker, self.data_dir, self.host_data_dir = runtime, broker, data_dir, host_data_dir
        self.pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="stager")

    def submit(self, messages: list[dict]) -> None:
        for message in messages:
            self.pool.submit(self.stage, Attempt.from_message(message))

    def stage(self, attempt: Attempt) -> bool:
        """True if this call started the rank's container."""
        if not protocol.take_stage(self.broker, attempt):
            return False  # a node claimed it first
        try:
            if not protocol.is_current(self.broker, attempt.job_key, attempt.attempt):
                protocol.drop_stage(self.broker, attempt)
                return False
            job_container.stage(attempt, self.runtime, self.broker, self.data_dir, self.host_data_dir)
            protocol.mark_staged(self.broker, attempt)
            return True
        except Exception:  # the claiming node starts it itself
            log.exception("could not start %s attempt %s rank %s ahead", attempt.job_name, attempt.attempt,
                          attempt.rank)
            protocol.drop_stage(self.broker, attempt)
            return False
