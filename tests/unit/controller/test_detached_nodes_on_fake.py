"""Detached nodes on FakeRuntime: a cluster tagged `amlemu.detached_nodes` (or every cluster, with the stack's
setting) gets nodes with a data volume of their own, the api's address, its CA and a token of their own instead
of the emulator's data folder; nothing of theirs is started ahead, each rank's file scope is recorded before it is
sent, and a gone node's volume goes too."""

import pytest

from emulator import pki, tokens
from emulator.controller.effects import Actuator, Effects
from emulator.controller.reconcilers.clusters import ClusterReconciler
from emulator.controller.reconcilers.node_volumes import EVERY, NodeVolumes
from emulator.controller.specs.nodes import NODE_DATA_DIR, detached
from emulator.dispatch import rank_files
from emulator.dispatch.celery_app import ready_key
from emulator.dispatch.protocol import Attempt
from emulator.runtime.labels import NODE
from emulator.services import computes
from tests.unit.controller.test_clusters_on_fake import submit


@pytest.fixture
def staged() -> list:
    return []


@pytest.fixture
def clusters(settings, store, fake, broker, clock, scheduler, staged) -> ClusterReconciler:
    pki.ensure_ca(settings.ca_dir)  # the api makes it as it starts
    act = Actuator(fake, broker, settings.stack, stage=staged.extend)
    return ClusterReconciler(settings, store, fake, broker, clock, scheduler, act)


def put(azure, name: str, tags: dict | None = None, min_nodes: int = 1) -> str:
    body = {"tags": tags or {}, "properties": {"computeType": "AmlCompute", "properties": {
        "vmSize": "Standard_DS3_v2", "scaleSettings": {"minNodeCount": min_nodes, "maxNodeCount": 1}}}}
    with azure.store.transaction() as repo:
        computes.put(repo, azure.ref, repo.workspace(azure.ref.key), name, body, azure.clock())
    return azure.key(name)


def test_a_tagged_clusters_node_has_a_volume_of_its_own_and_a_token_not_the_data_folder(azure, clusters, settings):
    put(azure, "far", {"amlemu.detached_nodes": "true"})
    clusters.tick()
    (spec,) = azure.runs("node")
    node_id = spec.labels[NODE]
    assert spec.volumes == {f"amlemu-unit-nodedata-{node_id}": NODE_DATA_DIR}
    assert str(settings.host_dir) not in spec.mounts and NODE_DATA_DIR not in spec.mounts.values()
    assert "AMLEMU_HOST_DATA_DIR" not in spec.env
    secret = tokens.load_secret(settings.data_dir / "token.key")
    assert spec.env[rank_files.TOKEN] == tokens.node_token(secret, node_id)
    assert tokens.node_token_valid(secret, node_id, f"Bearer {spec.env[rank_files.TOKEN]}")
    assert not tokens.node_token_valid(secret, "tvmps_other_d", f"Bearer {spec.env[rank_files.TOKEN]}")
    assert spec.env[rank_files.API_URL] == settings.node_api_url
    assert spec.env[rank_files.CA] == (settings.ca_dir / "ca.crt").read_text()
    assert spec.env[rank_files.VOLUME] == f"amlemu-unit-nodedata-{node_id}"


@pytest.mark.parametrize("stack_setting, tag, expected", [
    (False, None, False), (False, "true", True), (True, None, True), (True, "false", False), (True, "TRUE", True),
])
def test_the_stack_setting_makes_every_cluster_detached_unless_its_tag_says_otherwise(
        azure, settings, stack_setting, tag, expected):
    settings.detached_nodes = stack_setting
    put(azure, "any", {"amlemu.detached_nodes": tag} if tag else {}, min_nodes=0)
    assert detached(settings, azure.compute("any")) is expected


def test_a_detached_clusters_jobs_are_not_started_ahead_and_their_scope_is_recorded(
        azure, clusters, broker, store, settings, scheduler, fake, staged):
    for name, tags in (("far", {"amlemu.detached_nodes": "true"}), ("near", {})):
        put(azure, name, tags, min_nodes=0)
        submit(azure, store, settings, f"train-{name}", name)
        effects = Effects()
        with store.transaction() as repo:
            job = repo.job(azure.ref.child_id("jobs", f"train-{name}"))
            scheduler.dispatch(repo, job, repo.compute(azure.key(name)), azure.clock(), effects, ahead=True)
            job_key = job.key
        Actuator(fake, broker, settings.stack, stage=staged.extend)(effects)
        if name == "far":
            assert effects.stage == [] and staged == [] and len(effects.scopes) == 1
            recorded = rank_files.recorded(broker, job_key, 1, 0)
            assert recorded == rank_files.scope(Attempt.from_message(effects.scopes[0]))
            assert any(path.endswith("/outputs") for path in recorded.writes)
        else:  # a node that shares the data folder: its container starts ahead, as before
            assert len(effects.stage) == 1 and effects.scopes == [] and len(staged) == 1
            assert rank_files.recorded(broker, job_key, 1, 0) is None


def test_a_gone_nodes_volume_is_removed_and_a_live_ones_kept(azure, clusters, broker, store, settings, fake, clock):
    put(azure, "far", {"amlemu.detached_nodes": "true"})
    clusters.tick()
    (node,) = azure.nodes("far")
    broker.set(ready_key(node.node_id), 1)
    volumes = NodeVolumes(settings, store, fake, clock)
    volumes.tick()
    assert fake.volumes({}) == [f"amlemu-unit-nodedata-{node.node_id}"]

    with store.transaction() as repo:  # the cluster is deleted: its nodes' containers go, then their rows
        repo.compute(azure.key("far")).provisioning_state = "Deleting"
    clusters.tick()
    clock.advance(EVERY.total_seconds())
    volumes.tick()
    assert fake.volumes({}) == []
