"""Each workspace's networks are named from the stack's own network and a short stable id of the workspace."""

from emulator.domain import networks
from emulator.settings import Settings

A = "/subscriptions/s/resourcegroups/rg/providers/microsoft.machinelearningservices/workspaces/a"
B = "/subscriptions/s/resourcegroups/rg/providers/microsoft.machinelearningservices/workspaces/b"
B_ELSEWHERE = "/subscriptions/s/resourcegroups/rg2/providers/microsoft.machinelearningservices/workspaces/b"


def test_a_workspaces_networks_are_its_own_and_the_same_every_time():
    settings = Settings(docker_network="amlemu-t")
    assert settings.jobs_network(A) == settings.jobs_network(A.upper()) == networks.network_name("amlemu-t", "jobs", A)
    assert settings.jobs_network(A).startswith("amlemu-t-jobs-")
    assert settings.scoring_network(A).startswith("amlemu-t-scoring-")
    names = {settings.jobs_network(k) for k in (A, B, B_ELSEWHERE)} | {settings.scoring_network(k) for k in (A, B)}
    assert len(names) == 5  # the same name in another resource group is another workspace
    assert len(networks.workspace_tag(A)) == 12
    assert settings.shared_jobs_network == "amlemu-t-jobs" not in names  # an older stack's: never a workspace's
