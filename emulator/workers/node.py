"""A cluster node: one Celery worker, concurrency 1, consuming its cluster's queue."""

import redis
from celery.signals import worker_ready, worker_shutting_down

from emulator.workers.celery_app import make_celery, ready_key


def run(node_id: str, queue: str, redis_url: str) -> None:
    app = make_celery(redis_url)
    broker = redis.Redis.from_url(redis_url)

    @worker_ready.connect(weak=False)
    def _ready(**_):
        broker.set(ready_key(node_id), "1")

    @worker_shutting_down.connect(weak=False)
    def _leaving(**_):
        broker.delete(ready_key(node_id))

    app.worker_main(["worker", "--queues", queue, "--concurrency", "1", "--prefetch-multiplier", "1",
                     "--hostname", f"{node_id}@amlemu", "--loglevel", "INFO",
                     "--without-gossip", "--without-mingle", "--without-heartbeat"])
