"""A node on an attached host (issue 23): the same Celery worker as a cluster's node (specs/nodes.py), run by the
host's own engine, so what differs is only what the host can give it. It reaches the stack's Redis at the advertised
address (Settings.advertised_redis_url), runs its jobs on the host's engine (the host's own socket), and sits on a
network of its own there, which the detach removes with it. The data directory is not shared with a remote host:
the node's files come through the api (the node file sync, issue 23's other half); until then the node keeps its
folder in a volume on the host, labelled for the detach to remove."""

from dataclasses import replace

from emulator.controller.specs.nodes import NODE_DATA_DIR, node_spec
from emulator.domain.compute import cluster
from emulator.runtime import labels
from emulator.runtime.base import ContainerSpec
from emulator.settings import Settings
from emulator.store.tables import Compute

HOST_SOCKET = "/var/run/docker.sock"  # the host's own engine, where the node runs its jobs' containers
# Read by the node: the stack's own paths mean nothing on another machine.
LOCAL_ONLY_ENV = ("AMLEMU_HOST_DATA_DIR", "AMLEMU_DOCKER_ROOT")


def host_network(settings: Settings, compute: Compute) -> str:
    return f"amlemu-{settings.stack}-host-{compute.key.rsplit('/', 1)[-1]}"


def host_node_spec(settings: Settings, compute: Compute, node_id: str) -> ContainerSpec:
    """The node of attached compute `compute`, for its host's engine. Sized by the host: no VM-size limits."""
    if not settings.advertised_redis_url:
        raise ValueError("attached hosts run nodes only with AMLEMU_ADVERTISED_REDIS_URL set")
    local = node_spec(settings, compute, cluster.parse_spec({}), node_id)
    env = {k: v for k, v in local.env.items() if k not in LOCAL_ONLY_ENV}
    env["AMLEMU_REDIS_URL"] = settings.advertised_redis_url
    volume = f"{host_network(settings, compute)}-{node_id}"
    return replace(local, env=env, cpus=None, memory_bytes=None, network=host_network(settings, compute),
                   networks=(), mounts={HOST_SOCKET: HOST_SOCKET}, read_only=(), shallow_mounts={},
                   volumes={volume: NODE_DATA_DIR},
                   labels={**local.labels, labels.VM_SIZE: "attached"})
