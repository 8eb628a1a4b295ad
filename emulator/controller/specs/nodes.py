"""A node's container: a Celery worker on its compute's queue that runs its jobs' containers (a compute instance's
agent is one too)."""

import secrets

from emulator.dispatch import job_container, protocol
from emulator.dispatch.celery_app import cluster_queue
from emulator.domain.compute import cluster, vm_sizes
from emulator.runtime import labels
from emulator.runtime.base import ContainerSpec
from emulator.settings import Settings
from emulator.store.tables import Compute

NODE_DATA_DIR = "/var/lib/amlemu"
HOST_CGROUPS = "/sys/fs/cgroup"


def new_node_id(low_priority: bool) -> str:
    return f"tvmps_{secrets.token_hex(12)}_{'p' if low_priority else 'd'}"


def node_spec(settings: Settings, compute: Compute, spec: cluster.ClusterSpec, node_id: str, role: str = "node",
              slots: int = 1, extra_labels: dict[str, str] | None = None) -> ContainerSpec:
    """A node's container: a Celery worker on the compute's queue that runs its jobs' containers. A compute
    instance's agent (`role` "agent") is one too, with `slots` jobs at once."""
    cpus, memory = vm_sizes.scaled_limits(spec.vm_size, settings.resource_scale)
    name = f"amlemu-{settings.stack}-{role}-{node_id}"
    return ContainerSpec(
        name=name, image=settings.node_image, command=["node"],
        labels={labels.STACK: settings.stack, labels.ROLE: role, labels.NODE: node_id,
                labels.COMPUTE: compute.name, labels.COMPUTE_ID: compute.key,
                labels.WORKSPACE: compute.workspace_key.rsplit("/", 1)[-1],
                labels.PRIORITY: spec.priority, labels.VM_SIZE: spec.vm_size.name, **(extra_labels or {})},
        env={"AMLEMU_NODE_ID": node_id, "AMLEMU_QUEUE": cluster_queue(compute.key), "AMLEMU_SLOTS": str(slots),
             "AMLEMU_REDIS_URL": settings.redis_url, "REMAP_SIGTERM": "SIGQUIT",
             "AMLEMU_DATA_DIR": NODE_DATA_DIR, "AMLEMU_HOST_DATA_DIR": str(settings.host_dir),
             "AMLEMU_STACK": settings.stack, "AMLEMU_IMDS_ENDPOINT": protocol.imds_endpoint(name),
             **({"AMLEMU_DOCKER_ROOT": str(settings.docker_root)} if settings.docker_root else {})},
        # On its workspace's jobs network too, where its jobs reach its Scheduled Events (and nothing else of it
        # listens); the jobs of other workspaces are on networks of their own.
        cpus=cpus, memory_bytes=memory, network=settings.docker_network,
        networks=(settings.jobs_network(compute.workspace_key),),
        # The node is the emulator's own code: it starts its jobs' containers through the engine and lays
        # out their directories. Job containers get neither the socket nor the whole data directory.
        mounts={settings.docker_socket: "/var/run/docker.sock", str(settings.host_dir): NODE_DATA_DIR,
                HOST_CGROUPS: job_container.CGROUP_ROOT},  # to count the forks its jobs were refused (a fork bomb)
        read_only=(job_container.CGROUP_ROOT,),
        # to measure what its jobs write into their containers' own files (their disk limit)
        shallow_mounts={str(settings.docker_root): job_container.ENGINE_ROOT} if settings.docker_root else {})
