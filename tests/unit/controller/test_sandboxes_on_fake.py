"""A cluster's network sandboxes are on its workspace's jobs network; one an older stack left on the shared jobs
network is retired once no job is in it, and replaced by one on the workspace's."""

import pytest

from emulator.controller.reconcilers.sandboxes import PER_NODE, Sandboxes
from emulator.controller.specs.sandboxes import pool_of
from emulator.dispatch import protocol
from emulator.runtime.base import ContainerSpec
from emulator.runtime.labels import NETWORK, POOL, ROLE, SANDBOX, STACK
from tests.unit.controller.test_clusters_on_fake import bring_up, clusters  # noqa: F401 (a fixture)


def settle(sandboxes: Sandboxes, fake, settings) -> list:
    """One pass over what the engine lists, then its starts and removals carried out."""
    wanted = {STACK: settings.stack}
    sandboxes.tick(fake.list({**wanted, ROLE: "sandbox"}), fake.list({**wanted, ROLE: "job"}))
    for future in [*sandboxes.removing.values(), *(f for pool in sandboxes.starting.values() for f in pool.values())]:
        future.result()
    return fake.list({**wanted, ROLE: "sandbox"})


@pytest.fixture
def sandboxes(settings, store, fake, broker, clock, monkeypatch):
    # fakeredis runs no Lua here: a sandbox put back is simply free again (no lease is held in these tests)
    monkeypatch.setattr(protocol, "put_back_sandbox",
                        lambda broker, pool, name: broker.sadd(protocol.sandbox_pool_key(pool), name))
    made = Sandboxes(settings, store, fake, broker, clock)
    yield made
    made.workers.shutdown(wait=True)


def test_sandboxes_are_on_the_workspaces_network_and_an_older_stacks_go_once_free(
        azure, clusters, sandboxes, broker, fake, settings):  # noqa: F811
    bring_up(azure, clusters, broker, "pooled", 1)
    pool, own = pool_of(settings, azure.key("pooled")), settings.jobs_network(azure.ref.key)
    made = settle(sandboxes, fake, settings)
    assert len(made) == PER_NODE and {fake._get(s.id).spec.network for s in made} == {own}

    fake.ensure_network(settings.shared_jobs_network, {STACK: settings.stack})
    older = [fake.run(ContainerSpec(name=f"amlemu-unit-sandbox-old{i}", image="x", command=["infinity"],
                                    labels={STACK: settings.stack, ROLE: "sandbox", POOL: pool},
                                    network=settings.shared_jobs_network)) for i in range(2)]
    fake.run(ContainerSpec(name="amlemu-unit-job-x", image="x", command=["sleep"],  # a job in the second one
                           labels={STACK: settings.stack, ROLE: "job", SANDBOX: older[1].name},
                           network_of=older[1].id))
    names = {s.name for s in settle(sandboxes, fake, settings)}
    assert older[0].name not in names and older[1].name in names  # the free one went; the one in use stays
    assert sum(fake._get(s.id).spec.labels.get(NETWORK) == own for s in fake.list({ROLE: "sandbox"})) == PER_NODE


def test_a_sandbox_started_after_the_passs_listing_is_neither_missing_nor_dead(
        azure, clusters, sandboxes, broker, fake, settings):  # noqa: F811
    """The controller lists containers, then passes: a start that ends in between is not in that listing."""
    bring_up(azure, clusters, broker, "pooled", 1)
    wanted = {STACK: settings.stack}
    before = fake.list({**wanted, ROLE: "sandbox"})
    made = settle(sandboxes, fake, settings)
    assert len(made) == PER_NODE
    sandboxes.tick(before, [])  # a listing taken before those starts ended
    assert {name for pool in sandboxes.starting.values() for name in pool} <= {s.name for s in made}  # none more
    assert sandboxes.removing == {}
    assert {s.name for s in settle(sandboxes, fake, settings)} == {s.name for s in made}
    assert {s.name for s in settle(sandboxes, fake, settings)} == {s.name for s in made}
