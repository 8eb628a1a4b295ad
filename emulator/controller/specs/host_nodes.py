"""A node on an attached host (issue 23): a detached node (specs/nodes.py `own_data`: its data folder a volume of
its own engine, its files fetched from and sent back to the api), run by the host's own engine. What differs from a
detached node on the emulator's machine is only what the host can give it: it reaches the stack's Redis at the
advertised address (Settings.advertised_redis_url) and the api at Settings.node_api_url (set to an address the hosts
reach), runs its jobs on the host's engine (the host's own socket), sits on a network of its own there (which the
detach removes with its volume), and has the host's CPUs and memory, not a VM size's."""

from dataclasses import replace

from emulator.controller.specs.nodes import HOST_CGROUPS, node_spec
from emulator.dispatch import job_container
from emulator.domain.compute import cluster
from emulator.runtime import labels
from emulator.runtime.base import ContainerSpec
from emulator.settings import Settings
from emulator.store.tables import Compute

HOST_SOCKET = "/var/run/docker.sock"  # the host's own engine, where the node runs its jobs' containers
LOCAL_ONLY_ENV = ("AMLEMU_DOCKER_ROOT",)  # the emulator's engine's paths mean nothing on another machine


def host_network(settings: Settings, compute: Compute) -> str:
    return f"amlemu-{settings.stack}-host-{compute.key.rsplit('/', 1)[-1]}"


def setup_error(settings: Settings) -> dict | None:
    """What a compute whose nodes run on attached hosts shows while the stack gives them no address to reach it."""
    if settings.advertised_redis_url:
        return None
    return {"error": {"code": "NodeSetupFailure", "message": "Nodes on attached hosts need AMLEMU_ADVERTISED_REDIS_URL "
                      "and AMLEMU_NODE_API_URL set to addresses the hosts reach (README: attached compute)."}}


def host_node_spec(settings: Settings, compute: Compute, node_id: str,
                   pooled: tuple[cluster.ClusterSpec, str] | None = None) -> ContainerSpec:
    """The node of attached compute `compute`, for its host's engine; `pooled` (its spec, the host's compute key): a
    node of cluster `compute` on one of the hosts of its pool, with its VM size's share of the host."""
    if not settings.advertised_redis_url:
        raise ValueError("attached hosts run nodes only with AMLEMU_ADVERTISED_REDIS_URL set")
    spec, host = pooled or (cluster.parse_spec({}), None)
    local = node_spec(settings, compute, spec, node_id, own_data=True)
    env = {k: v for k, v in local.env.items() if k not in LOCAL_ONLY_ENV}
    env["AMLEMU_REDIS_URL"] = settings.advertised_redis_url
    mounts = {HOST_SOCKET: HOST_SOCKET, HOST_CGROUPS: job_container.CGROUP_ROOT}  # the host's own, as on any Linux
    shared = replace(local, env=env, network=host_network(settings, compute), networks=(), mounts=mounts,
                     shallow_mounts={})
    if host is not None:
        return replace(shared, labels={**local.labels, labels.HOST: host})
    return replace(shared, cpus=None, memory_bytes=None, labels={**local.labels, labels.VM_SIZE: "attached"})
