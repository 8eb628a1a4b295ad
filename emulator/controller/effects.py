"""Docker and Redis work decided inside a store transaction and carried out after it commits.

Deciding first and acting after keeps transactions short (the api never waits on the engine) and makes a
crash between the two harmless: every pass is level-based, so the next one decides the same again. Every
reconciler decides into one `Effects` and hands it to the `Actuator`; only the containers it starts (and the
workstations it probes) it carries out itself, since it records how each start went.
"""

import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import redis

from emulator.dispatch import protocol, rank_files
from emulator.dispatch.celery_app import ready_key
from emulator.dispatch.protocol import Attempt
from emulator.runtime import labels
from emulator.runtime.base import ContainerSpec, Runtime


@dataclass
class Effects:
    # containers
    start: list[ContainerSpec] = field(default_factory=list)  # started by the reconciler that decided them
    probe: list[str] = field(default_factory=list)  # instance workstations to ask for their activity (likewise)
    stop: list[str] = field(default_factory=list)  # container ids: SIGTERM
    kill: list[str] = field(default_factory=list)  # container ids: SIGKILL
    remove: list[str] = field(default_factory=list)  # container ids
    drop_volumes: list[str] = field(default_factory=list)
    drop_dirs: list[Path] = field(default_factory=list)  # folders of the data directory that go (logs of a deployment)
    # nodes
    forget: list[str] = field(default_factory=list)  # node ids whose readiness flag goes
    notices: list[tuple[str, dict | None]] = field(default_factory=list)  # (node id, Scheduled Events doc)
    signal_jobs: list[tuple[str, int, int, str]] = field(default_factory=list)  # (job key, attempt, rank, signal)
    # jobs
    current: list[tuple[str, int]] = field(default_factory=list)  # (job key, attempt) now current
    send: list[tuple[str, dict]] = field(default_factory=list)  # (queue, message), after `current`
    stage: list[dict] = field(default_factory=list)  # messages sent ahead, whose containers start now
    scopes: list[dict] = field(default_factory=list)  # messages to detached nodes: their files' scope, before `send`
    clear: list[str] = field(default_factory=list)  # job keys no attempt of which may start any more
    stop_jobs: list[str] = field(default_factory=list)  # job keys whose containers go


class Actuator:
    """Carries out what was decided. `send` puts a rank's message on a queue and `stage` starts containers ahead
    (the controller's Celery app and Stager); without them (a reconciler tried on its own) jobs are not sent."""

    def __init__(self, runtime: Runtime, broker: redis.Redis, stack: str,
                 send: Callable[[str, dict], None] | None = None, stage: Callable[[list[dict]], None] | None = None):
        self.runtime, self.broker, self.stack, self.send, self.stage = runtime, broker, stack, send, stage

    def __call__(self, effects: Effects) -> None:
        self._nodes(effects)
        self._containers(effects)
        self._jobs(effects)

    def _nodes(self, effects: Effects) -> None:
        for node_id, document in effects.notices:
            protocol.publish_notice(self.broker, node_id, document)
        for job_key, attempt, rank, signal in effects.signal_jobs:
            for container in self._job_containers(job_key, {labels.ATTEMPT: str(attempt), labels.RANK: str(rank)}):
                self.runtime.signal(container.id, signal)

    def _containers(self, effects: Effects) -> None:
        for container_id in effects.stop:
            if container_id:
                self.runtime.signal(container_id, "SIGTERM")
        for container_id in effects.kill:
            self.runtime.signal(container_id, "SIGKILL")
        for container_id in effects.remove:
            self.runtime.remove(container_id)
        for volume in effects.drop_volumes:
            self.runtime.remove_volume(volume)
        for folder in effects.drop_dirs:
            shutil.rmtree(folder, ignore_errors=True)
        for node_id in effects.forget:
            self.broker.delete(ready_key(node_id))

    def _jobs(self, effects: Effects) -> None:
        for job_key in dict.fromkeys(effects.clear):
            protocol.clear_current(self.broker, job_key)
        for job_key in dict.fromkeys(effects.stop_jobs):
            for container in self._job_containers(job_key):
                self.runtime.remove(container.id)
        for job_key, attempt in effects.current:
            protocol.set_current(self.broker, job_key, attempt)
        for message in effects.scopes:  # what the api lets the rank's node fetch and send back
            rank_files.record(self.broker, Attempt.from_message(message))
        if self.send is not None:
            for queue, message in effects.send:
                self.send(queue, message)
        if self.stage is not None and effects.stage:
            self.stage(effects.stage)

    def _job_containers(self, job_key: str, more: dict[str, str] | None = None):
        return self.runtime.list({labels.STACK: self.stack, labels.ROLE: "job", labels.JOB: protocol.job_tag(job_key),
                                  **(more or {})})
