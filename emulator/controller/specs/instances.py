"""A compute instance's two containers: the workstation (JupyterLab, a terminal, sshd; the user's home on a named
volume) and its agent, a node that runs the instance's jobs."""

from emulator.controller.specs.nodes import node_spec
from emulator.domain.compute import vm_sizes
from emulator.runtime import labels
from emulator.runtime.base import ContainerSpec
from emulator.services import computes, instances
from emulator.settings import Settings
from emulator.store.tables import Compute

HOME = "/home/azureuser"


def home_volume(settings: Settings, compute: Compute) -> str:
    return f"amlemu-{settings.stack}-home-{compute.key.rsplit('/', 1)[-1]}-{compute.created_at:%Y%m%d%H%M%S}"


def instance_labels(settings: Settings, row: Compute, role: str) -> dict[str, str]:
    return {labels.STACK: settings.stack, labels.ROLE: role, labels.COMPUTE: row.name,
            labels.COMPUTE_ID: row.key, labels.WORKSPACE: row.workspace_key.rsplit("/", 1)[-1],
            labels.GENERATION: str(row.instance["generation"])}


def workstation_spec(settings: Settings, row: Compute) -> ContainerSpec:
    spec = instances.parse_spec(row.body["properties"]["properties"])
    cpus, memory = vm_sizes.scaled_limits(spec.vm_size, settings.resource_scale)
    env = {"AMLEMU_JUPYTER_TOKEN": row.instance["token"], "AMLEMU_INSTANCE": row.name}
    if spec.ssh_key:
        env["AMLEMU_SSH_PUBLIC_KEY"] = spec.ssh_key
    return ContainerSpec(
        name=f"amlemu-{settings.stack}-instance-{row.name}-{row.instance['generation']}",
        image=settings.instance_image, command=[], labels=instance_labels(settings, row, "instance"), env=env,
        # On its workspace's scoring network, which the host reaches (its published ports), and nothing of another
        # workspace does: the jobs network may be sealed (settings.jobs_outbound), where its agent and jobs are.
        cpus=cpus, memory_bytes=memory, network=settings.scoring_network(row.workspace_key),
        volumes={home_volume(settings, row): HOME},
        ports=_ports(row), drop_capabilities=True)


def _ports(row: Compute) -> dict[int, int | None]:
    """Jupyter's and sshd's ports, on the host ports they had before when free: an instance's URLs and SSH
    port stay the same across stop, start and restart."""
    before = row.instance.get("ports") or {}
    return {port: before.get(str(port)) for port in (instances.JUPYTER_PORT, instances.SSH_PORT)}


def agent_spec(settings: Settings, row: Compute, node_id: str) -> ContainerSpec:
    cluster_spec = computes.spec_of(row)
    return node_spec(settings, row, cluster_spec, node_id, role="agent",
                     slots=settings.instance_job_slots, extra_labels=instance_labels(settings, row, "agent"))
