"""A network sandbox: a container that only holds a network namespace on its workspace's jobs network (a pool is
a cluster's, so a workspace's), which a one-node job's container joins (`network_of`) instead of waiting for one of its own to be made."""

from emulator.dispatch.celery_app import cluster_queue
from emulator.runtime import labels
from emulator.runtime.base import ContainerSpec
from emulator.settings import Settings

MEMORY_BYTES = 32 * 2**20  # it runs `sleep`


def pool_of(settings: Settings, compute_key: str) -> str:
    """A cluster's pool, named apart from other stacks' that might share the Redis (tests do)."""
    return f"{settings.stack}.{cluster_queue(compute_key)}"


def sandbox_spec(settings: Settings, pool: str, name: str, network: str) -> ContainerSpec:
    return ContainerSpec(
        name=name, image=settings.node_image, command=["infinity"], entrypoint=["sleep"],
        labels={labels.STACK: settings.stack, labels.ROLE: "sandbox", labels.POOL: pool, labels.NETWORK: network},
        memory_bytes=MEMORY_BYTES, network=network, user=settings.job_user)
