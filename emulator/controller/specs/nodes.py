"""A node's container: a Celery worker on its compute's queue that runs its jobs' containers (a compute instance's
agent is one too)."""

import secrets

from emulator import tokens
from emulator.dispatch import job_container, protocol
from emulator.dispatch import rank_files as node_env
from emulator.dispatch.celery_app import cluster_queue
from emulator.domain.compute import cluster, placement, vm_sizes
from emulator.runtime import labels
from emulator.runtime.base import ContainerSpec
from emulator.settings import Settings
from emulator.store.tables import Compute

NODE_DATA_DIR = "/var/lib/amlemu"
HOST_CGROUPS = "/sys/fs/cgroup"
DETACHED_TAG = "amlemu.detached_nodes"  # a cluster's tag: "true" or "false" overrides Settings.detached_nodes


def detached(settings: Settings, compute: Compute) -> bool:
    """Whether the cluster's nodes keep a data folder of their own (workers/file_sync.py) rather than share the
    emulator's: the controller then lays out nothing for them (no container is started ahead)."""
    if on_hosts(compute):  # nodes on attached hosts (an attached VM's, a pooled cluster's): other machines
        return True
    if compute.compute_type != "AmlCompute":  # a compute instance's agent shares the emulator's files
        return False
    tag = str(((compute.body or {}).get("tags") or {}).get(DETACHED_TAG, "")).strip().lower()
    return tag == "true" or (settings.detached_nodes and tag != "false")


def on_hosts(compute: Compute) -> bool:
    """Whether the compute's nodes run on attached hosts' engines (an attached VM's, a pooled cluster's): their jobs
    are on a network of that host's (specs/host_nodes.py), where the emulator's own networks do not exist."""
    return compute.compute_type == "VirtualMachine" or (
        compute.compute_type == "AmlCompute" and placement.POOL_TAG in ((compute.body or {}).get("tags") or {}))


def volume_prefix(settings: Settings) -> str:
    return f"amlemu-{settings.stack}-nodedata-"


def _detached_env(settings: Settings, node_id: str) -> dict[str, str]:
    """How a detached node reaches its files: the api's URL, the CA its certificate is under, its own token."""
    secret = tokens.load_secret(settings.data_dir / "token.key")
    return {node_env.API_URL: settings.node_api_url, node_env.TOKEN: tokens.node_token(secret, node_id),
            node_env.CA: (settings.ca_dir / "ca.crt").read_text(),
            node_env.VOLUME: volume_prefix(settings) + node_id}


def new_node_id(low_priority: bool) -> str:
    return f"tvmps_{secrets.token_hex(12)}_{'p' if low_priority else 'd'}"


def node_spec(settings: Settings, compute: Compute, spec: cluster.ClusterSpec, node_id: str, role: str = "node",
              slots: int = 1, extra_labels: dict[str, str] | None = None, own_data: bool = False) -> ContainerSpec:
    """A node's container: a Celery worker on the compute's queue that runs its jobs' containers. A compute
    instance's agent (`role` "agent") is one too, with `slots` jobs at once. `own_data`: a detached node, with a
    volume of its own for its data folder and no view of the emulator's."""
    cpus, memory = vm_sizes.scaled_limits(spec.vm_size, settings.resource_scale)
    name = f"amlemu-{settings.stack}-{role}-{node_id}"
    # a detached node's data folder is a volume of its own engine's; the others share the emulator's
    data_env, data_mount = (_detached_env(settings, node_id), {}) if own_data else \
        ({"AMLEMU_HOST_DATA_DIR": str(settings.host_dir)}, {str(settings.host_dir): NODE_DATA_DIR})
    return ContainerSpec(
        name=name, image=settings.node_image, command=["node"],
        labels={labels.STACK: settings.stack, labels.ROLE: role, labels.NODE: node_id,
                labels.COMPUTE: compute.name, labels.COMPUTE_ID: compute.key,
                labels.WORKSPACE: compute.workspace_key.rsplit("/", 1)[-1],
                labels.PRIORITY: spec.priority, labels.VM_SIZE: spec.vm_size.name, **(extra_labels or {})},
        env={"AMLEMU_NODE_ID": node_id, "AMLEMU_QUEUE": cluster_queue(compute.key), "AMLEMU_SLOTS": str(slots),
             "AMLEMU_REDIS_URL": settings.redis_url, "REMAP_SIGTERM": "SIGQUIT",
             "AMLEMU_DATA_DIR": NODE_DATA_DIR, **data_env,
             "AMLEMU_STACK": settings.stack, "AMLEMU_IMDS_ENDPOINT": protocol.imds_endpoint(name),
             **({"AMLEMU_DOCKER_ROOT": str(settings.docker_root)} if settings.docker_root else {})},
        # On its workspace's jobs network too, where its jobs reach its Scheduled Events (and nothing else of it
        # listens); the jobs of other workspaces are on networks of their own.
        cpus=cpus, memory_bytes=memory, network=settings.docker_network,
        networks=(settings.jobs_network(compute.workspace_key),),
        # The node is the emulator's own code: it starts its jobs' containers through the engine and lays
        # out their directories. Job containers get neither the socket nor the whole data directory.
        mounts={settings.docker_socket: "/var/run/docker.sock", **data_mount,
                HOST_CGROUPS: job_container.CGROUP_ROOT},  # to count the forks its jobs were refused (a fork bomb)
        volumes={volume_prefix(settings) + node_id: NODE_DATA_DIR} if own_data else {},
        read_only=(job_container.CGROUP_ROOT,),
        # to measure what its jobs write into their containers' own files (their disk limit)
        shallow_mounts={str(settings.docker_root): job_container.ENGINE_ROOT} if settings.docker_root else {})

