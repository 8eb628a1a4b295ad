"""ClusterReconciler on FakeRuntime: node containers, autoscaling, lost nodes and nodes that cannot start, one pass
at a time on the test's clock. The Docker-backed versions are in tests/integration/test_cluster_controller.py."""

import pytest

from emulator.controller.effects import Actuator, Effects
from emulator.controller.reconcilers.clusters import LEAVE_GRACE_SECONDS, UNUSABLE_KEEP_SECONDS, ClusterReconciler
from emulator.controller.reconcilers.jobs import JobReconciler
from emulator.dispatch import protocol
from emulator.dispatch.celery_app import cluster_queue, ready_key
from emulator.domain.compute.cluster import NodeState
from emulator.errors import RuntimeUnavailable
from emulator.runtime.base import MANAGED, ContainerSpec
from emulator.runtime.labels import COMPUTE, COMPUTE_ID, NODE, PRIORITY, ROLE, STACK, VM_SIZE, WORKSPACE
from emulator.services import assets, computes, jobs
from emulator.services.environments import Prepared
from emulator.services.workspaces import default_ref

GIB = 1024 ** 3


@pytest.fixture
def clusters(settings, store, fake, broker, clock, scheduler, act) -> ClusterReconciler:
    return ClusterReconciler(settings, store, fake, broker, clock, scheduler, act)


def put(azure, name: str, min_nodes: int, max_nodes: int, idle: str | None = None) -> str:
    scale = {"minNodeCount": min_nodes, "maxNodeCount": max_nodes}
    if idle is not None:
        scale["nodeIdleTimeBeforeScaleDown"] = idle
    body = {"properties": {"computeType": "AmlCompute", "properties": {
        "vmSize": "Standard_DS3_v2", "vmPriority": "Dedicated", "scaleSettings": scale}}}
    with azure.store.transaction() as repo:
        computes.put(repo, azure.ref, repo.workspace(azure.ref.key), name, body, azure.clock())
    return azure.key(name)


def bring_up(azure, clusters, broker, name: str, count: int, **scale) -> list:
    """A cluster of `count` idle nodes: one pass starts them, each raises its readiness flag, the next makes them idle."""
    put(azure, name, count, scale.pop("max_nodes", count), **scale)
    clusters.tick()
    for node in azure.nodes(name):
        broker.set(ready_key(node.node_id), 1)  # what the node's worker does once it listens on its queue
    clusters.tick()
    nodes = azure.nodes(name)
    assert [n.state for n in nodes] == [NodeState.IDLE] * count
    return nodes


def test_min_nodes_start_node_containers_idle_once_ready_and_provisioned(azure, clusters, broker, clock, settings):
    settings.provisioning_delay_seconds = 30.0
    key = put(azure, "min-one", 1, 2)
    clusters.tick()

    assert azure.compute("min-one").provisioning_state == "Succeeded"
    assert azure.operations(key) == [("Create", "Succeeded")]
    (node,) = azure.nodes("min-one")
    (spec,) = azure.runs("node")
    (container,) = azure.containers("node")
    assert node.state == NodeState.PREPARING and (node.container_id, node.private_ip) == (container.id, container.ip)
    assert spec.name == container.name == f"amlemu-unit-node-{node.node_id}"
    assert {MANAGED: "true", STACK: "unit", ROLE: "node", NODE: node.node_id, COMPUTE: "min-one", COMPUTE_ID: key,
            WORKSPACE: settings.workspace, PRIORITY: "Dedicated", VM_SIZE: "Standard_DS3_v2"}.items() \
        <= container.labels.items()
    assert (spec.cpus, spec.memory_bytes) == (1.0, int(3.5 * GIB))  # DS3_v2 (4 vCPUs, 14 GiB) at resource scale 0.25
    assert (spec.network, spec.networks) == (settings.docker_network, (settings.jobs_network(default_ref(settings).key),))
    assert spec.env["AMLEMU_NODE_ID"] == node.node_id and spec.env["AMLEMU_QUEUE"] == cluster_queue(key)
    view = azure.view("min-one")
    assert (view["allocationState"], view["targetNodeCount"]) == ("Resizing", 1)
    assert view["nodeStateCounts"]["preparingNodeCount"] == 1

    broker.set(ready_key(node.node_id), 1)
    clock.advance(29)  # ready, but the provisioning delay has not passed
    clusters.tick()
    assert azure.nodes("min-one")[0].state == NodeState.PREPARING
    clock.advance(1)
    clusters.tick()
    assert azure.nodes("min-one")[0].state == NodeState.IDLE
    view = azure.view("min-one")
    assert (view["allocationState"], view["currentNodeCount"], view["nodeStateCounts"]["idleNodeCount"]) == \
        ("Steady", 1, 1)
    for _ in range(3):  # nothing more to do: no new container, no churn
        clusters.tick()
    assert len(azure.runs("node")) == 1 and azure.nodes("min-one")[0].state == NodeState.IDLE


@pytest.mark.parametrize("traps_sigterm", [False, True], ids=["obeys-sigterm", "traps-sigterm"])
def test_an_idle_node_leaves_after_the_idle_time_with_sigterm_then_sigkill_after_the_grace(
        azure, clusters, broker, clock, fake, traps_sigterm):
    (node,) = bring_up(azure, clusters, broker, "shrinking", 1)
    key = put(azure, "shrinking", 0, 1, idle="PT2M")  # min down to zero: the node may go once idle 2 minutes
    if traps_sigterm:  # a worker finishing what it does: it outlives SIGTERM
        fake.trap(node.container_id, "SIGTERM")
    clock.advance(119)
    clusters.tick()
    assert azure.nodes("shrinking")[0].state == NodeState.IDLE and azure.signals() == []
    assert azure.operations(key) == [("Create", "Succeeded"), ("Update", "Succeeded")]

    clock.advance(1)
    clusters.tick()
    assert azure.nodes("shrinking")[0].state == NodeState.LEAVING
    assert azure.view("shrinking")["nodeStateCounts"]["leavingNodeCount"] == 1
    assert azure.signals() == [(node.container_id, "SIGTERM")]
    if traps_sigterm:
        clock.advance(LEAVE_GRACE_SECONDS - 1)
        clusters.tick()
        assert fake.find(node.container_id).running and azure.signals() == [(node.container_id, "SIGTERM")]
        clock.advance(1)
        clusters.tick()
        assert azure.signals()[-1] == (node.container_id, "SIGKILL")
    assert fake.find(node.container_id).exit_code == (137 if traps_sigterm else 143)

    clusters.tick()  # its container has ended: the node has left
    assert azure.nodes("shrinking") == [] and azure.containers("node") == []
    assert not broker.exists(ready_key(node.node_id))
    view = azure.view("shrinking")
    assert (view["allocationState"], view["currentNodeCount"], view["targetNodeCount"]) == ("Steady", 0, 0)


def submit(azure, store, settings, name: str, compute: str) -> JobReconciler:
    """A command job, taken to Queued by the jobs step of a pass (its environment's image is there already)."""
    with store.transaction() as repo:
        assets.put(repo, azure.ref, assets.ENVIRONMENTS, "py", "1",
                   {"properties": {"image": "python:3.11-slim"}}, azure.clock())
        jobs.put(repo, azure.ref, name, {"properties": {
            "jobType": "Command", "command": "python train.py",
            "environmentId": azure.ref.child_id("environments", "py") + "/versions/1",
            "computeId": azure.ref.child_id("computes", compute)}}, azure.clock())
    reconciler = JobReconciler(settings, lambda *_: None, lambda _env: Prepared(image="python:3.11-slim"))
    with store.transaction() as repo:
        reconciler.tick(repo, azure.clock(), Effects())
        assert repo.job(azure.ref.child_id("jobs", name)).status == "Queued"
    return reconciler


def report(store, reconciler, clock, job_key: str, node_id: str, kind: str) -> None:
    """A node's report on the event stream, applied as the controller's events step does."""
    with store.transaction() as repo:
        reconciler.apply_event(repo, {"kind": kind, "job": job_key, "node": node_id, "attempt": 1, "rank": 0,
                                      "container": "job-container"}, clock(), Effects())


def test_a_node_whose_container_dies_is_unusable_its_job_requeued_and_it_is_replaced(
        azure, clusters, broker, clock, fake, store, settings):
    (node,) = bring_up(azure, clusters, broker, "resilient", 1)
    job_reconciler = submit(azure, store, settings, "train", "resilient")
    job_key = azure.ref.child_id("jobs", "train").lower()
    clusters.tick()  # the idle node is sent the job
    assert protocol.is_current(broker, job_key, 1)
    report(store, job_reconciler, clock, job_key, node.node_id, "claimed")
    report(store, job_reconciler, clock, job_key, node.node_id, "running")
    assert azure.nodes("resilient")[0].state == NodeState.RUNNING

    clock.advance(5)
    fake.exit(node.container_id, 137)
    clusters.tick()

    with store.transaction() as repo:
        job = repo.job(job_key)
        assert (job.status, job.attempt) == ("Queued", 2)
        assert f"Node {node.node_id} was lost while running attempt 1" in job.history[-1]["message"]
    assert not protocol.is_current(broker, job_key, 1)  # nothing of attempt 1 may start any more
    dead = next(n for n in azure.nodes("resilient") if n.node_id == node.node_id)
    assert dead.state == NodeState.UNUSABLE and dead.run_id is None
    assert node.container_id in azure.removed() and not broker.exists(ready_key(node.node_id))
    (replacement,) = azure.containers("node")
    assert replacement.labels[NODE] != node.node_id
    assert azure.view("resilient")["nodeStateCounts"]["unusableNodeCount"] == 1

    clock.advance(UNUSABLE_KEEP_SECONDS)  # shown for a minute, then dropped
    clusters.tick()
    assert node.node_id not in {n.node_id for n in azure.nodes("resilient")}


def test_a_node_that_cannot_start_shows_a_setup_failure_and_is_retried_after_the_backoff_only(
        azure, clusters, clock, fake):
    fake.fail_next_run(RuntimeUnavailable("Docker engine error: no space left on device"), labels={ROLE: "node"})
    put(azure, "no-room", 1, 1)
    clusters.tick()

    (node,) = azure.nodes("no-room")
    assert node.state == NodeState.UNUSABLE and node.container_id is None and azure.containers("node") == []
    (error,) = azure.compute("no-room").errors
    assert error["error"]["code"] == "NodeSetupFailure"
    assert error["error"]["message"] == f"Node {node.node_id} could not start: Docker engine error: no space left " \
                                        "on device"
    view = azure.view("no-room")
    assert (view["allocationState"], view["nodeStateCounts"]["unusableNodeCount"]) == ("Resizing", 1)

    clock.advance(0.9)  # the first retry waits a second
    clusters.tick()
    assert len(azure.runs("node")) == 1 and [n.node_id for n in azure.nodes("no-room")] == [node.node_id]
    clock.advance(0.1)
    clusters.tick()
    assert len(azure.runs("node")) == 2
    (retried,) = azure.nodes("no-room")
    (container,) = azure.containers("node")
    assert retried.node_id != node.node_id and retried.state == NodeState.PREPARING
    assert retried.container_id == container.id and azure.compute("no-room").errors is None


def test_a_deleted_cluster_loses_its_containers_then_its_row(azure, clusters, broker, clock, fake, store):
    nodes = bring_up(azure, clusters, broker, "doomed", 2)
    clock.advance(1)
    with store.transaction() as repo:
        computes.delete(repo, azure.ref, "doomed", clock())
    clusters.tick()

    assert {n.container_id for n in nodes} <= azure.removed() and azure.containers("node") == []
    assert azure.compute("doomed") is None and azure.nodes("doomed") == []
    assert azure.operations(azure.key("doomed")) == [("Create", "Succeeded"), ("Delete", "Succeeded")]
    assert not any(broker.exists(ready_key(n.node_id)) for n in nodes)


def test_an_orphan_node_container_goes_and_another_stacks_stays(azure, clusters, broker, fake):
    (node,) = bring_up(azure, clusters, broker, "with-orphan", 1)

    def node_like(stack: str, node_id: str):
        return fake.run(ContainerSpec(name=f"amlemu-{stack}-node-{node_id}", image="amlemu/emulator", command=["node"],
                                      labels={STACK: stack, ROLE: "node", NODE: node_id, COMPUTE: "with-orphan",
                                              COMPUTE_ID: azure.key("with-orphan")}))

    orphan, foreign = node_like("unit", "tvmps_orphan_d"), node_like("other", "tvmps_foreign_d")
    clusters.tick()

    assert fake.find(orphan.id) is None and fake.find(foreign.id).running
    assert [c.id for c in azure.containers("node")] == [node.container_id]
    assert [n.state for n in azure.nodes("with-orphan")] == [NodeState.IDLE]


def test_a_restarted_controller_adopts_running_nodes_and_forgets_one_gone_with_the_stack(
        azure, clusters, broker, fake, settings, store, clock, scheduler):
    kept, gone = bring_up(azure, clusters, broker, "survivor", 2)
    fake.remove(gone.container_id)  # taken down while the controller was down (`amlemu down`): not a lost node

    restarted = ClusterReconciler(settings, store, fake, broker, clock, scheduler, Actuator(fake, broker, "unit"))
    restarted.tick()

    nodes = {n.node_id: n for n in azure.nodes("survivor")}
    assert gone.node_id not in nodes and nodes[kept.node_id].container_id == kept.container_id
    assert nodes[kept.node_id].state == NodeState.IDLE  # adopted as it was, not restarted
    assert len(azure.runs("node")) == 3  # the two first ones and a replacement for the forgotten node
    assert azure.view("survivor")["nodeStateCounts"]["unusableNodeCount"] == 0


def test_a_node_of_an_older_stack_on_the_shared_jobs_network_joins_its_workspaces(
        azure, clusters, broker, fake, settings, store, clock, scheduler):
    (node,) = bring_up(azure, clusters, broker, "older", 1)
    own = settings.jobs_network(azure.ref.key)
    fake.ensure_network(settings.shared_jobs_network, {STACK: settings.stack})
    fake.join_network(node.container_id, settings.shared_jobs_network, "old")
    fake.leave_network(node.container_id, own)  # as an older stack started it: on the one shared network only

    restarted = ClusterReconciler(settings, store, fake, broker, clock, scheduler, Actuator(fake, broker, "unit"))
    restarted.tick()

    container = fake._get(node.container_id)
    assert container.aliases[own] == container.spec.name  # its jobs there reach its Scheduled Events by its name
    assert settings.shared_jobs_network in container.ips  # and those still on the old one too, until they end
    assert [n.container_id for n in azure.nodes("older")] == [node.container_id]  # adopted, not replaced
