"""ClusterReconciler against real node containers, a real Redis and a SQLite store.

The controller runs here, on the host, one `tick()` at a time; node containers run the real Celery
worker from the emulator image on the session's network. Nothing sleeps: every wait ticks the
controller until a condition holds or a deadline passes.
"""

import uuid
from collections.abc import Callable
from datetime import UTC, datetime

import docker
import pytest
import redis

from emulator.api.arm import computes as arm
from emulator.controller.reconcilers.clusters import ClusterReconciler
from emulator.dispatch.celery_app import cluster_queue, make_celery, ready_key
from emulator.domain.compute.cluster import NodeState
from emulator.domain.ids import WorkspaceRef
from emulator.runtime.base import MANAGED, ContainerSpec, Observed
from emulator.runtime.docker import DockerRuntime
from emulator.services import computes, workspaces
from emulator.settings import Settings
from emulator.store.db import Store
from emulator.store.tables import Compute, Node, Operation
from tests.waiting import wait_until

GIB = 1024 ** 3
VM_SIZE = "Standard_DS3_v2"  # 4 vCPUs, 14 GiB; at resource_scale 0.25: 1 CPU, 3.5 GiB per node
NODE_NANO_CPUS = 1_000_000_000
NODE_MEMORY = int(3.5 * GIB)
NODE_START_TIMEOUT = 60.0


def cluster_body(min_nodes: int, max_nodes: int, idle: str | None = None) -> dict:
    scale = {"minNodeCount": min_nodes, "maxNodeCount": max_nodes}
    if idle is not None:
        scale["nodeIdleTimeBeforeScaleDown"] = idle
    return {"properties": {"computeType": "AmlCompute",
                           "properties": {"vmSize": VM_SIZE, "vmPriority": "Dedicated", "scaleSettings": scale}}}


class Aml:
    """The store and the engine as the tests look at them, plus the use cases the api would call."""

    def __init__(self, settings: Settings, store: Store, runtime: DockerRuntime, broker: redis.Redis):
        self.settings, self.store, self.runtime, self.broker = settings, store, runtime, broker
        self.ref = workspaces.default_ref(settings)
        with store.transaction() as repo:
            workspaces.ensure_default(repo, settings, self.now())

    @staticmethod
    def now() -> datetime:
        return datetime.now(UTC)

    def put(self, name: str, min_nodes: int, max_nodes: int, idle: str | None = None) -> str:
        with self.store.transaction() as repo:
            row, _op, _created = computes.put(repo, self.ref, repo.workspace(self.ref.key), name,
                                              cluster_body(min_nodes, max_nodes, idle), self.now())
            return row.key

    def delete(self, name: str) -> None:
        with self.store.transaction() as repo:
            assert computes.delete(repo, self.ref, name, self.now()) is not None

    def delete_workspace(self) -> None:
        with self.store.transaction() as repo:
            assert workspaces.delete(repo, self.ref, self.now())

    def compute(self, key: str) -> Compute | None:
        with self.store.transaction() as repo:
            return repo.compute(key)

    def nodes(self, key: str) -> list[Node]:
        with self.store.transaction() as repo:
            return repo.nodes(key)

    def node(self, node_id: str) -> Node | None:
        with self.store.transaction() as repo:
            return repo.session.get(Node, node_id)

    def operations(self, key: str) -> list[Operation]:
        with self.store.transaction() as repo:
            return list(repo.session.query(Operation).filter(Operation.resource_key == key.lower())
                        .order_by(Operation.created_at))

    def view(self, key: str) -> dict:
        """The cluster as the ARM api renders it (allocationState, counts)."""
        with self.store.transaction() as repo:
            row = repo.compute(key)
            return arm.compute(row, repo.nodes(key), repo.workspace(row.workspace_key))["properties"]["properties"]

    def containers(self) -> dict[str, Observed]:
        """This stack's node containers, by node id."""
        return {c.labels["amlemu.node"]: c
                for c in self.runtime.list({"amlemu.stack": self.settings.stack, "amlemu.role": "node"})}

    def idle(self, key: str, count: int) -> list[Node] | None:
        """The cluster's nodes when exactly `count` are idle, each with its running container, else None."""
        nodes, containers = self.nodes(key), self.containers()
        if len(nodes) != count or any(n.state != NodeState.IDLE for n in nodes):
            return None
        if set(containers) != {n.node_id for n in nodes} or not all(c.running for c in containers.values()):
            return None
        return nodes


def tick_until(reconciler: ClusterReconciler, predicate: Callable[[], object], *, message: str,
               timeout: float = NODE_START_TIMEOUT):
    """Run controller passes until predicate() holds; returns its value."""
    def step():
        reconciler.tick()
        return predicate()
    return wait_until(step, timeout=timeout, interval=reconciler.settings.reconcile_interval_seconds,
                      message=message)


def ticks(reconciler: ClusterReconciler, count: int) -> None:
    for _ in range(count):
        reconciler.tick()


@pytest.fixture
def aml(settings, store, runtime, broker) -> Aml:
    return Aml(settings, store, runtime, broker)


@pytest.fixture
def other_stack(docker_client):
    """A second stack label (another emulator on the same engine), swept afterwards."""
    name = f"it-other-{uuid.uuid4().hex[:8]}"
    yield name
    for container in docker_client.containers.list(all=True, filters={"label": f"amlemu.stack={name}"},
                                                   ignore_removed=True):
        container.remove(force=True)


def bring_up(aml: Aml, reconciler: ClusterReconciler, name: str, count: int, **scale) -> tuple[str, list[Node]]:
    key = aml.put(name, min_nodes=count, max_nodes=scale.pop("max_nodes", count), **scale)
    nodes = tick_until(reconciler, lambda: aml.idle(key, count), message=f"{count} idle nodes of {name}")
    return key, nodes


# --- scale up ---------------------------------------------------------------------------------------------


def test_min_nodes_become_idle_node_containers(aml, reconciler, settings, docker_client, redis_host_url):
    key = aml.put("min-two", min_nodes=2, max_nodes=4)

    reconciler.tick()
    compute = aml.compute(key)
    assert compute.provisioning_state == "Succeeded"
    assert [op.status for op in aml.operations(key)] == ["Succeeded"]
    first = aml.view(key)
    assert first["allocationState"] == "Resizing"
    assert first["targetNodeCount"] == 2 and first["currentNodeCount"] == 2
    assert first["nodeStateCounts"]["preparingNodeCount"] == 2
    assert len(aml.containers()) == 2

    states = [first["allocationState"]]

    def steady_with_two_idle():
        view = aml.view(key)
        if view["allocationState"] != states[-1]:
            states.append(view["allocationState"])
        return aml.idle(key, 2) if view["allocationState"] == "Steady" else None

    nodes = tick_until(reconciler, steady_with_two_idle, message="2 idle nodes and a Steady cluster")
    assert states == ["Resizing", "Steady"]

    view = aml.view(key)
    assert view["currentNodeCount"] == 2 and view["targetNodeCount"] == 2
    assert view["nodeStateCounts"] == {"idleNodeCount": 2, "runningNodeCount": 0, "preparingNodeCount": 0,
                                       "unusableNodeCount": 0, "leavingNodeCount": 0, "preemptedNodeCount": 0}

    containers = aml.containers()
    assert set(containers) == {n.node_id for n in nodes}
    for node in nodes:
        container = containers[node.node_id]
        assert node.container_id == container.id and node.private_ip == container.ip
        assert container.name == f"amlemu-{settings.stack}-node-{node.node_id}"
        assert {MANAGED: "true", "amlemu.stack": settings.stack, "amlemu.role": "node", "amlemu.node": node.node_id,
                "amlemu.compute": "min-two", "amlemu.compute-id": key, "amlemu.workspace": settings.workspace,
                "amlemu.priority": "Dedicated", "amlemu.vm-size": VM_SIZE}.items() <= container.labels.items()
        info = docker_client.api.inspect_container(container.id)
        host = info["HostConfig"]
        assert host["NanoCpus"] == NODE_NANO_CPUS and host["Memory"] == NODE_MEMORY
        assert host["Init"] is True and host["Privileged"] is False
        # The stack's network (redis), and its workspace's jobs network, where its jobs reach its Scheduled Events.
        jobs_network = settings.jobs_network(WorkspaceRef.from_key(key).key)
        assert sorted(info["NetworkSettings"]["Networks"]) == sorted([settings.docker_network, jobs_network])
        assert docker_client.networks.get(jobs_network).attrs["Labels"]["amlemu.workspace-key"] \
            == WorkspaceRef.from_key(key).key
        env = dict(item.split("=", 1) for item in info["Config"]["Env"])
        assert env["AMLEMU_NODE_ID"] == node.node_id
        assert env["AMLEMU_QUEUE"] == cluster_queue(key)
        assert env["AMLEMU_REDIS_URL"] == settings.redis_url  # the in-network alias, not the host port
        # The worker really started: it raised its readiness flag itself.
        assert aml.broker.get(ready_key(node.node_id)) == b"1"

    # ...and it answers Celery's remote control on the cluster's broker.
    app = make_celery(redis_host_url)
    try:
        hostnames = {f"{n.node_id}@amlemu" for n in nodes}

        def everyone_pongs():
            replies = app.control.ping(destination=sorted(hostnames), timeout=1.0)
            return {name for reply in replies for name in reply} == hostnames

        wait_until(everyone_pongs, timeout=20, message="every node to answer a Celery ping")
    finally:
        app.close()

    # Further passes change nothing: no new containers, no state churn.
    ticks(reconciler, 5)
    assert {n: c.id for n, c in aml.containers().items()} == {n.node_id: n.container_id for n in nodes}
    assert aml.idle(key, 2) is not None and aml.view(key)["allocationState"] == "Steady"


# --- scale down -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("time_scale", [1.0])  # real seconds: PT1S means one second of idleness
def test_lowering_min_to_zero_lets_idle_nodes_leave(aml, reconciler):
    key, nodes = bring_up(aml, reconciler, "shrinking", 2)
    ids = {n.node_id for n in nodes}
    aml.put("shrinking", min_nodes=0, max_nodes=2, idle="PT1S")

    seen: set[str] = set()

    def all_gone():
        seen.update(n.state for n in aml.nodes(key))
        return not aml.nodes(key) and not aml.containers()

    # Well inside the controller's 30 s leave grace: the workers stopped on SIGTERM, no SIGKILL needed.
    tick_until(reconciler, all_gone, timeout=25, message="both nodes to leave and their containers to go")
    assert NodeState.LEAVING in seen
    view = aml.view(key)
    assert view["allocationState"] == "Steady"
    assert view["currentNodeCount"] == 0 and view["targetNodeCount"] == 0
    assert aml.compute(key).provisioning_state == "Succeeded"
    assert [(op.action, op.status) for op in aml.operations(key)] == [("Create", "Succeeded"),
                                                                       ("Update", "Succeeded")]
    assert not any(aml.broker.exists(ready_key(node_id)) for node_id in ids)


@pytest.mark.parametrize("time_scale", [1.0])  # the default 120 s idle time really is long here
def test_lowering_max_below_the_node_count_removes_idle_nodes_at_once(aml, reconciler):
    key, nodes = bring_up(aml, reconciler, "capped", 2)
    aml.put("capped", min_nodes=0, max_nodes=1)  # default idle time: only the excess leaves

    def one_left():
        remaining = aml.nodes(key)
        return (len(remaining) == 1 and remaining[0].state == NodeState.IDLE
                and set(aml.containers()) == {remaining[0].node_id} and remaining)

    (kept,) = tick_until(reconciler, one_left, timeout=25, message="the node above maxNodeCount to leave")
    assert kept.node_id in {n.node_id for n in nodes}
    ticks(reconciler, 5)  # the survivor is within its idle time: it stays
    assert aml.idle(key, 1) is not None
    view = aml.view(key)
    assert view["allocationState"] == "Steady"
    assert view["currentNodeCount"] == 1 and view["targetNodeCount"] == 1


# --- deletion ---------------------------------------------------------------------------------------------


def test_deleting_a_cluster_removes_its_containers_and_row(aml, reconciler):
    key = aml.put("doomed", min_nodes=2, max_nodes=2)
    tick_until(reconciler, lambda: len(aml.containers()) == 2 and all(n.container_id for n in aml.nodes(key)),
               message="2 node containers")
    node_ids = {n.node_id for n in aml.nodes(key)}

    aml.delete("doomed")
    tick_until(reconciler, lambda: aml.compute(key) is None and not aml.containers(),
               message="the cluster row and its containers to go")
    assert aml.nodes(key) == []
    assert [(op.action, op.status) for op in aml.operations(key)] == [("Create", "Succeeded"),
                                                                       ("Delete", "Succeeded")]
    assert not any(aml.broker.exists(ready_key(node_id)) for node_id in node_ids)


def test_deleting_the_workspace_removes_its_clusters(aml, reconciler):
    key = aml.put("orphaned-by-ws", min_nodes=1, max_nodes=1)
    tick_until(reconciler, lambda: len(aml.containers()) == 1, message="a node container")

    aml.delete_workspace()
    tick_until(reconciler, lambda: aml.compute(key) is None and not aml.containers(),
               message="the workspace's cluster and containers to go")


# --- failures ---------------------------------------------------------------------------------------------


def lose(docker_client: docker.DockerClient, container_id: str, how: str) -> None:
    """Take a node's container away behind the emulator's back."""
    if how == "kill":
        docker_client.containers.get(container_id).kill()  # SIGKILL: the container stays, exited
    else:
        docker_client.containers.get(container_id).remove(force=True)  # gone altogether


@pytest.mark.parametrize("how", ["kill", "remove"])
def test_a_lost_node_is_marked_unusable_and_replaced(aml, reconciler, docker_client, settings, how):
    key, nodes = bring_up(aml, reconciler, "resilient", 2)
    victim, survivor = nodes
    lose(docker_client, victim.container_id, how)

    def victim_noticed():
        node = aml.node(victim.node_id)
        return node is not None and node.state == NodeState.UNUSABLE and victim.node_id not in aml.containers()

    tick_until(reconciler, victim_noticed, timeout=20, message="the dead node to be marked unusable")
    with pytest.raises(docker.errors.NotFound):
        docker_client.containers.get(victim.container_id)
    assert not aml.broker.exists(ready_key(victim.node_id))
    assert aml.view(key)["nodeStateCounts"]["unusableNodeCount"] == 1

    def replaced():
        active = [n for n in aml.nodes(key) if n.state != NodeState.UNUSABLE]
        containers = aml.containers()
        if len(active) == 2 and all(n.state == NodeState.IDLE for n in active) \
                and set(containers) == {n.node_id for n in active}:
            return active
        return None

    active = tick_until(reconciler, replaced, message="a replacement node to become idle")
    assert survivor.node_id in {n.node_id for n in active}
    assert aml.containers()[survivor.node_id].id == survivor.container_id  # the survivor was left alone
    assert victim.node_id not in {n.node_id for n in active}

    # The unusable node is reported for a while (60 s, time-scaled), then dropped.
    tick_until(reconciler, lambda: aml.node(victim.node_id) is None, timeout=60 * settings.time_scale + 20,
               message="the unusable node row to be dropped")
    view = aml.view(key)
    assert view["allocationState"] == "Steady" and view["nodeStateCounts"]["idleNodeCount"] == 2
    assert view["nodeStateCounts"]["unusableNodeCount"] == 0


def test_orphan_node_containers_are_removed(aml, reconciler, runtime, settings, other_stack):
    key, (node,) = bring_up(aml, reconciler, "with-orphan", 1)

    def node_like(stack: str) -> Observed:
        node_id = f"tvmps_{uuid.uuid4().hex[:24]}_d"
        return runtime.run(ContainerSpec(
            name=f"amlemu-{stack}-node-{node_id}", image="amlemu/redis:latest", command=["sleep", "300"],
            labels={"amlemu.stack": stack, "amlemu.role": "node", "amlemu.node": node_id,
                    "amlemu.compute": "with-orphan", "amlemu.compute-id": key}))

    orphan = node_like(settings.stack)
    foreign = node_like(other_stack)  # another stack's node: not this controller's business
    assert orphan.labels["amlemu.node"] in aml.containers()

    tick_until(reconciler, lambda: orphan.labels["amlemu.node"] not in aml.containers(), timeout=20,
               message="the orphan container to be removed")
    assert {n: c.id for n, c in aml.containers().items()} == {node.node_id: node.container_id}
    assert [c.id for c in runtime.list({"amlemu.stack": other_stack})] == [foreign.id]
    assert aml.idle(key, 1) is not None


class CountingRuntime:
    """The real runtime, counting the containers the controller asks for."""

    def __init__(self, inner: DockerRuntime):
        self.inner, self.runs = inner, 0

    def run(self, spec: ContainerSpec) -> Observed:
        self.runs += 1
        return self.inner.run(spec)

    def __getattr__(self, name):
        return getattr(self.inner, name)


@pytest.fixture
def broken_image(make_reconciler, settings, runtime):
    """A controller whose node image does not exist, with its run() calls counted."""
    counting = CountingRuntime(runtime)
    missing = settings.model_copy(update={"node_image": f"amlemu/missing-{uuid.uuid4().hex[:8]}:latest"})
    return make_reconciler(settings=missing, runtime=counting), counting


@pytest.mark.parametrize("time_scale", [1.0])  # the unusable keep time is a full minute
def test_a_node_that_cannot_start_is_reported_unusable(aml, broken_image):
    reconciler, _counting = broken_image
    key = aml.put("no-image", min_nodes=1, max_nodes=1)
    reconciler.tick()

    (node,) = aml.nodes(key)
    assert node.state == NodeState.UNUSABLE and node.container_id is None
    assert aml.containers() == {}
    view = aml.view(key)
    assert view["nodeStateCounts"]["unusableNodeCount"] == 1
    assert view["allocationState"] == "Resizing" and view["targetNodeCount"] == 1


@pytest.mark.parametrize("time_scale", [1.0])  # the unusable keep time is a full minute
def test_a_node_that_cannot_start_is_retried_after_the_keep_time_not_every_pass(aml, broken_image):
    reconciler, counting = broken_image
    key = aml.put("no-image-storm", min_nodes=1, max_nodes=1)
    ticks(reconciler, 6)
    assert counting.runs == 1
    assert len(aml.nodes(key)) == 1


# --- controller restarts ----------------------------------------------------------------------------------


@pytest.fixture
def restarted(make_reconciler, settings, redis_host_url):
    """A fresh controller: new store engine, engine client and broker connection, same data."""
    resources = []

    def make(**overrides) -> ClusterReconciler:
        store = Store(settings.db_url)
        engine = docker.from_env(timeout=120)
        broker = redis.Redis.from_url(redis_host_url)
        resources.extend([store.close, engine.close, broker.close])
        args = {"store": store, "runtime": DockerRuntime(engine), "broker": broker, **overrides}
        return make_reconciler(**args)

    yield make
    for close in resources:
        close()


def test_a_restarted_controller_adopts_healthy_nodes(aml, reconciler, restarted):
    key, nodes = bring_up(aml, reconciler, "survivor", 2)
    before = {n.node_id: n.container_id for n in nodes}

    fresh = restarted()
    ticks(fresh, 5)
    after = aml.idle(key, 2)
    assert after is not None
    assert {n.node_id: n.container_id for n in after} == before
    assert {n: c.id for n, c in aml.containers().items()} == before
    assert all(aml.broker.exists(ready_key(node_id)) for node_id in before)
    assert aml.view(key)["allocationState"] == "Steady"


@pytest.mark.parametrize("how, reported", [("kill", NodeState.UNUSABLE), ("remove", None)])
def test_a_restarted_controller_settles_nodes_lost_while_it_was_down(aml, reconciler, restarted, docker_client,
                                                                      how, reported):
    """A container that exited while the controller was down died; one absent altogether went down with
    the stack (`amlemu down`) and is forgotten. Either way the cluster is brought back to its minimum."""
    key, nodes = bring_up(aml, reconciler, "lost-while-down", 2)
    victim, survivor = nodes
    lose(docker_client, victim.container_id, how)

    fresh = restarted()
    fresh.tick()
    node = aml.node(victim.node_id)
    assert (node and node.state) == reported
    assert victim.node_id not in aml.containers()
    assert not aml.broker.exists(ready_key(victim.node_id))

    def back_to_two():
        active = [n for n in aml.nodes(key) if n.state != NodeState.UNUSABLE]
        return len(active) == 2 and all(n.state == NodeState.IDLE for n in active) \
            and set(aml.containers()) == {n.node_id for n in active}

    tick_until(fresh, back_to_two, message="a replacement node to become idle")
    assert aml.containers()[survivor.node_id].id == survivor.container_id


class ControllerCrash(BaseException):
    """The controller process dying: not an Exception, so nothing in the reconciler catches it."""


class CrashAfterRun:
    """A runtime whose controller dies right after the engine started a container."""

    def __init__(self, inner: DockerRuntime):
        self.inner = inner

    def run(self, spec: ContainerSpec) -> Observed:
        self.inner.run(spec)
        raise ControllerCrash(spec.name)

    def __getattr__(self, name):
        return getattr(self.inner, name)


def crash_mid_start(aml: Aml, make_reconciler, runtime: DockerRuntime, name: str) -> tuple[str, Node, Observed]:
    """A cluster whose only node's container started, but the controller died before recording it."""
    key = aml.put(name, min_nodes=1, max_nodes=1)
    with pytest.raises(ControllerCrash):
        make_reconciler(runtime=CrashAfterRun(runtime)).tick()
    (node,) = aml.nodes(key)
    assert node.state == NodeState.PREPARING and node.container_id is None
    (container,) = aml.containers().values()
    assert container.labels["amlemu.node"] == node.node_id
    return key, node, container


def test_a_controller_restarted_mid_start_adopts_the_started_container(aml, make_reconciler, runtime, restarted):
    key, node, container = crash_mid_start(aml, make_reconciler, runtime, "crashed-start")

    fresh = restarted()
    (idle,) = tick_until(fresh, lambda: aml.idle(key, 1), message="the adopted node to become idle")
    assert idle.node_id == node.node_id
    assert {n: c.id for n, c in aml.containers().items()} == {node.node_id: container.id}  # not recreated


def test_a_controller_restarted_mid_start_records_the_adopted_container(aml, make_reconciler, runtime,
                                                                        restarted):
    key, node, container = crash_mid_start(aml, make_reconciler, runtime, "crashed-record")

    fresh = restarted()
    tick_until(fresh, lambda: aml.idle(key, 1), message="the adopted node to become idle")
    adopted = aml.node(node.node_id)
    assert adopted.container_id == container.id
    assert adopted.private_ip == container.ip
