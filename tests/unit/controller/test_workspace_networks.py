"""A workspace's networks are made when a container first needs one, sealed for jobs unless set otherwise; the api
joins every jobs network under the name jobs reach it by (a recreated api too), the controller every scoring
network; a deleted workspace's networks go once nothing of it is left on them."""

from datetime import timedelta

import pytest

from emulator.controller.workspace_networks import RECHECK, WorkspaceNetworks
from emulator.domain.ids import WorkspaceRef
from emulator.runtime.base import ContainerSpec
from emulator.runtime.labels import NETWORK, SERVICE, STACK, WORKSPACE_KEY
from emulator.services import workspaces
from emulator.settings import Settings
from tests.unit.controller.conftest import NOON

OTHER = WorkspaceRef("00000000-0000-0000-0000-000000000000", "rg", "other")


def _service(fake, settings: Settings, service: str, name: str):
    return fake.run(ContainerSpec(name=name, image="amlemu/emulator:latest", command=[service],
                                  labels={STACK: settings.stack, SERVICE: service}, network=settings.docker_network))


@pytest.fixture
def two(settings, store, clock):
    with store.transaction() as repo:
        workspaces.ensure_default(repo, settings, clock())
        workspaces.put(repo, OTHER, {"location": "local"}, clock())
    return workspaces.default_ref(settings).key, OTHER.key


def test_a_jobs_network_is_made_sealed_with_the_api_on_it_and_a_new_api_joins_too(settings, store, fake, two):
    mine, other = two
    api = _service(fake, settings, "api", "t-api-1")
    networks = WorkspaceNetworks(settings, store, fake)

    name = networks.jobs(mine)
    assert name == settings.jobs_network(mine) and name in fake.sealed
    assert {STACK: settings.stack, NETWORK: "jobs", WORKSPACE_KEY: mine}.items() <= fake.networks({})[name].items()
    assert fake._get(api.id).aliases == {name: settings.jobs_api_host}  # at once: a job may start there now
    assert settings.jobs_network(other) not in fake.network_labels  # made only when needed

    fake.remove(api.id)
    again = _service(fake, settings, "api", "t-api-2")
    networks.tick(NOON)
    assert fake._get(again.id).aliases == {name: settings.jobs_api_host}
    networks.jobs(other)
    assert set(fake._get(again.id).aliases) == {name, settings.jobs_network(other)}


def test_jobs_with_internet_get_a_bridge_the_host_is_on(settings, store, fake, two):
    networks = WorkspaceNetworks(settings.model_copy(update={"jobs_outbound": "internet"}), store, fake)
    assert networks.jobs(two[0]) not in fake.sealed


def test_the_controller_joins_each_scoring_network_to_probe_the_model_servers(settings, store, fake, two):
    controller = _service(fake, settings, "controller", "t-controller-1")
    networks = WorkspaceNetworks(settings, store, fake)
    name = networks.scoring(two[1])
    assert name == settings.scoring_network(two[1]) and name not in fake.sealed  # the scoring router reaches it
    assert name in fake._get(controller.id).ips


def test_a_deleted_workspaces_networks_go_once_nothing_of_it_is_on_them(settings, store, fake, clock, two):
    mine, other = two
    api = _service(fake, settings, "api", "t-api-1")
    networks = WorkspaceNetworks(settings, store, fake)
    jobs, scoring = networks.jobs(other), networks.scoring(other)
    job = fake.run(ContainerSpec(name="t-job", image="x", command=["sleep"], labels={STACK: settings.stack},
                                 network=jobs))
    with store.transaction() as repo:
        workspaces.delete(repo, OTHER, clock())

    networks.tick(NOON)
    assert jobs not in fake._get(api.id).ips  # the api left; a job still there keeps the network
    assert jobs in fake.network_labels and scoring not in fake.network_labels
    fake.remove(job.id)
    networks.tick(NOON + RECHECK / 2)  # not looked at again yet
    assert jobs in fake.network_labels
    networks.tick(NOON + RECHECK + timedelta(seconds=1))
    assert jobs not in fake.network_labels
    assert networks.jobs(mine) in fake.network_labels  # the other workspace's stays


def test_an_adopted_container_joins_its_workspaces_network_once(settings, store, fake, two):
    networks = WorkspaceNetworks(settings, store, fake)
    fake.ensure_network(settings.shared_jobs_network, {STACK: settings.stack})
    node = fake.run(ContainerSpec(name="t-node", image="x", command=["node"], labels={STACK: settings.stack},
                                  network=settings.docker_network, networks=(settings.shared_jobs_network,)))
    name = networks.jobs(two[0])
    networks.attach(node, name)
    assert fake._get(node.id).aliases[name] == "t-node"  # its jobs there reach its Scheduled Events by its name
    fake.remove(node.id)
    networks.attach(node, name)  # once only: not asked of the engine again (it would fail: the node is gone)
