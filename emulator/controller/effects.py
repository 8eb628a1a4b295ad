"""Docker and Redis work decided inside a store transaction and carried out after it commits.

Deciding first and acting after keeps transactions short (the api never waits on the engine) and makes a
crash between the two harmless: every pass is level-based, so the next one decides the same again.
"""

from dataclasses import dataclass, field

import redis
from celery import Celery

from emulator.runtime.base import ContainerSpec, Runtime
from emulator.dispatch import protocol
from emulator.dispatch.celery_app import ready_key
from emulator.runtime import labels


@dataclass
class Effects:
    start: list[tuple[str, ContainerSpec]] = field(default_factory=list)  # (node id, spec)
    stop: list[str] = field(default_factory=list)  # container ids: SIGTERM
    kill: list[str] = field(default_factory=list)  # container ids: SIGKILL
    remove: list[str] = field(default_factory=list)  # container ids
    forget: list[str] = field(default_factory=list)  # node ids whose readiness flag goes
    current: list[tuple[str, int]] = field(default_factory=list)  # (job key, attempt) now current
    send: list[tuple[str, dict]] = field(default_factory=list)  # (queue, message), after `current`
    stage: list[dict] = field(default_factory=list)  # messages sent ahead, whose containers start now
    clear: list[str] = field(default_factory=list)  # job keys no attempt of which may start any more
    stop_jobs: list[str] = field(default_factory=list)  # job keys whose containers go
    notices: list[tuple[str, dict | None]] = field(default_factory=list)  # (node id, Scheduled Events doc)
    signal_jobs: list[tuple[str, int, int, str]] = field(default_factory=list)  # (job key, attempt, rank, signal)


def apply_jobs(effects: Effects, runtime: Runtime, broker: redis.Redis, celery: Celery, stack: str) -> None:
    for job_key in dict.fromkeys(effects.clear):
        protocol.clear_current(broker, job_key)
    for job_key in dict.fromkeys(effects.stop_jobs):
        for container in runtime.list({labels.STACK: stack, labels.ROLE: "job",
                                       labels.JOB: protocol.job_tag(job_key)}):
            runtime.remove(container.id)
    for job_key, attempt in effects.current:
        protocol.set_current(broker, job_key, attempt)
    for queue, message in effects.send:
        celery.send_task(protocol.RUN_TASK, args=[message], queue=queue)


def apply_nodes(effects: Effects, runtime: Runtime, broker: redis.Redis, stack: str) -> None:
    for node_id, document in effects.notices:
        protocol.publish_notice(broker, node_id, document)
    for job_key, attempt, rank, signal in effects.signal_jobs:
        rank_labels = {labels.JOB: protocol.job_tag(job_key), labels.ATTEMPT: str(attempt),
                       labels.RANK: str(rank)}
        for container in runtime.list({labels.STACK: stack, labels.ROLE: "job", **rank_labels}):
            runtime.signal(container.id, signal)
    for container_id in effects.stop:
        if container_id:
            runtime.signal(container_id, "SIGTERM")
    for container_id in effects.kill:
        runtime.signal(container_id, "SIGKILL")
    for container_id in effects.remove:
        runtime.remove(container_id)
    for node_id in effects.forget:
        broker.delete(ready_key(node_id))
