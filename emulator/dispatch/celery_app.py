"""The Celery app shared by the controller (which enqueues) and the nodes (which consume).

Settings follow the semantics reference (item 11): late acks, one message at a time, requeue when a
worker process dies, a visibility timeout longer than any job so the broker never redelivers a
running job; the controller, not the broker, brings back work from dead nodes.
"""

import hashlib

from celery import Celery

VISIBILITY_TIMEOUT = 22 * 24 * 3600  # longer than Azure's 21-day job lifetime


def make_celery(redis_url: str) -> Celery:
    app = Celery("amlemu", broker=redis_url)
    app.conf.update(
        task_acks_late=True,
        task_reject_on_worker_lost=True,
        worker_prefetch_multiplier=1,
        worker_enable_soft_shutdown_on_idle=True,
        worker_soft_shutdown_timeout=5,
        broker_transport_options={"visibility_timeout": VISIBILITY_TIMEOUT},
        broker_connection_retry_on_startup=True,
        task_default_queue="amlemu.default",
        worker_hijack_root_logger=False,
    )
    return app


def cluster_queue(compute_key: str) -> str:
    """One Celery queue per cluster, named from its (case-insensitive) ARM id."""
    return "amlemu.cluster." + hashlib.sha256(compute_key.lower().encode()).hexdigest()[:16]


def ready_key(node_id: str) -> str:
    return f"amlemu:node:{node_id}:ready"
