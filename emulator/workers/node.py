"""A cluster node: one Celery worker, concurrency 1, consuming its cluster's queue and running job ranks. A compute
instance's agent is the same with one slot per job the instance runs at once."""

import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from celery.signals import worker_ready, worker_shutting_down

from emulator.dispatch import job_container, protocol
from emulator.dispatch.celery_app import make_celery, ready_key
from emulator.runtime.docker import DockerRuntime
from emulator.settings import Settings
from emulator.workers import attempts, file_sync, imds


def run(node_id: str, queue: str, settings: Settings, slots: int = 1) -> None:
    app = make_celery(settings.redis_url)
    broker = protocol.resilient(settings.redis_url)
    runtime = DockerRuntime()
    files = file_sync.from_env(node_id, settings.data_dir)  # a detached node: a data folder of its own
    host_data_dir = runtime.volume_path(os.environ[file_sync.VOLUME]) if files else \
        Path(settings.host_data_dir or settings.data_dir)
    cleanup = ThreadPoolExecutor(1, thread_name_prefix="cleanup")  # removals off the next job's path

    cgroups = Path(job_container.CGROUP_ROOT)
    node = attempts.NodeIdentity(node_id, os.environ.get("AMLEMU_IMDS_ENDPOINT"),
                                 str(settings.docker_root) if settings.docker_root else None,
                                 cgroups if cgroups.is_dir() else None, files)
    imds.serve(broker, node_id)

    def hand_back(message: dict) -> None:
        app.send_task(protocol.RUN_TASK, args=[message], queue=queue)

    @app.task(name=protocol.RUN_TASK, acks_late=True)
    def run_attempt(message: dict) -> str:
        return attempts.execute(message, runtime, broker, node, settings.data_dir, host_data_dir, hand_back,
                                cleanup.submit)

    @worker_ready.connect(weak=False)
    def _ready(**_):
        broker.set(ready_key(node_id), "1")
        protocol.nudge(broker)  # the controller marks the node idle and dispatches now, not at its next pass

    @worker_shutting_down.connect(weak=False)
    def _leaving(**_):
        broker.delete(ready_key(node_id))

    app.worker_main(["worker", "--queues", queue, "--concurrency", str(slots), "--prefetch-multiplier", "1",
                     "--hostname", f"{node_id}@amlemu", "--loglevel", "INFO",
                     "--pool", "solo" if slots == 1 else "threads",
                     "--without-gossip", "--without-mingle", "--without-heartbeat"])
