"""InstanceReconciler on FakeRuntime: the workstation and agent containers of a compute instance through create,
stop, start, delete and a workstation that cannot start, one pass at a time on the test's clock. The Docker-backed
versions are in tests/integration/test_instances_controller.py."""

from datetime import timedelta

import pytest

from emulator.controller.reconcilers.instances import STOP_GRACE_SECONDS, InstanceReconciler
from emulator.controller.specs.instances import HOME
from emulator.dispatch.celery_app import ready_key
from emulator.domain.compute.cluster import NodeState
from emulator.domain.compute.instance import LastOperation
from emulator.errors import ValidationFailed
from emulator.runtime.labels import COMPUTE, COMPUTE_ID, GENERATION, ROLE, STACK
from emulator.services import computes, events

NAME = "my-ci"
ACTIVITY = ["amlemu-activity"]  # what the workstation answers once Jupyter is up: its activity, as JSON
IDLE = '{"kernels": 0, "busy_kernels": 0, "terminals": 0, "ssh_sessions": 0, "last_activity": null}\n'


@pytest.fixture
def reconciler(settings, store, fake, broker, clock, scheduler, act) -> InstanceReconciler:
    return InstanceReconciler(settings, store, fake, broker, clock, scheduler, act)


def tick(reconciler: InstanceReconciler, azure) -> None:
    """One pass of the instances step, on the containers the pass lists (workstations and agents)."""
    reconciler.tick(azure.containers("instance") + azure.containers("agent"))


def record(azure) -> dict | None:
    row = azure.compute(NAME)
    return row and row.instance


def operation(azure) -> tuple[str, str]:
    last = LastOperation.from_row(record(azure)["lastOperation"])
    return last.name, last.status


def create(azure) -> None:
    body = {"properties": {"computeType": "ComputeInstance", "properties": {"vmSize": "Standard_DS3_v2"}}}
    with azure.store.transaction() as repo:
        computes.put(repo, azure.ref, repo.workspace(azure.ref.key), NAME, body, azure.clock())


def ask(azure, action: str) -> None:
    with azure.store.transaction() as repo:
        if action == "Delete":
            computes.delete(repo, azure.ref, NAME, azure.clock())
        else:
            computes.act(repo, azure.ref, NAME, action, azure.clock())


def running(azure, reconciler, broker, fake) -> dict:
    """Create the instance and take it to Running: its agent raises its readiness flag, Jupyter answers."""
    create(azure)
    tick(reconciler, azure)
    (agent,) = azure.nodes(NAME)
    broker.set(ready_key(agent.node_id), 1)
    fake.script_exec(ACTIVITY, 0, IDLE)
    tick(reconciler, azure)
    assert record(azure)["state"] == "Running"
    return record(azure)


def test_create_starts_workstation_and_agent_of_generation_one_and_runs_once_jupyter_answers(
        azure, reconciler, broker, fake, clock):
    create(azure)
    tick(reconciler, azure)

    (workstation,), (agent,) = azure.containers("instance"), azure.containers("agent")
    for container in (workstation, agent):
        assert {STACK: "unit", COMPUTE: NAME, COMPUTE_ID: azure.key(NAME), GENERATION: "1"}.items() \
            <= container.labels.items()
    (spec,) = azure.runs("instance")
    assert spec.volumes == {f"amlemu-unit-home-{NAME}-20260101120000": HOME} and spec.drop_capabilities
    assert spec.env["AMLEMU_JUPYTER_TOKEN"] == record(azure)["token"]
    assert record(azure)["ports"] == {str(port): host for port, host in workstation.ports.items()}
    (node,) = azure.nodes(NAME)
    assert node.container_id == agent.id and agent.labels["amlemu.node"] == node.node_id
    assert record(azure)["state"] == "Creating" and operation(azure) == ("Create", "InProgress")

    clock.advance(1)
    tick(reconciler, azure)  # the agent is not ready: the workstation is not asked yet
    assert reconciler.probed == {} and azure.nodes(NAME)[0].state == NodeState.PREPARING
    broker.set(ready_key(node.node_id), 1)
    tick(reconciler, azure)  # asked, Jupyter does not answer yet (the command is not there): still creating
    assert reconciler.probed == {azure.key(NAME): clock()}
    assert azure.nodes(NAME)[0].state == NodeState.IDLE and record(azure)["state"] == "Creating"
    fake.script_exec(ACTIVITY, 0, IDLE)
    tick(reconciler, azure)

    assert record(azure)["state"] == "Running" and operation(azure) == ("Create", "Succeeded")
    assert azure.compute(NAME).provisioning_state == "Succeeded"
    assert azure.operations(azure.key(NAME)) == [("Create", "Succeeded")]
    assert len(azure.runs("instance")) == len(azure.runs("agent")) == 1


def test_stop_sends_sigterm_then_removes_after_the_grace_and_start_brings_generation_two_on_the_same_home(
        azure, reconciler, broker, fake, clock, store):
    before = running(azure, reconciler, broker, fake)
    (workstation,), (agent,) = azure.containers("instance"), azure.containers("agent")
    fake.trap(workstation.id, "SIGTERM")  # Jupyter takes its time to shut down; the agent stops at once
    clock.advance(1)
    ask(azure, "Stop")
    tick(reconciler, azure)

    assert record(azure)["state"] == "Stopping"
    assert set(azure.signals()) == {(workstation.id, "SIGTERM"), (agent.id, "SIGTERM")}
    assert fake.find(workstation.id).running and not fake.find(agent.id).running
    clock.advance(STOP_GRACE_SECONDS - 1)
    tick(reconciler, azure)
    assert agent.id in azure.removed() and fake.find(workstation.id).running and record(azure)["state"] == "Stopping"
    clock.advance(1)
    tick(reconciler, azure)

    assert workstation.id in azure.removed() and azure.containers("instance") == azure.containers("agent") == []
    assert record(azure)["state"] == "Stopped" and operation(azure) == ("Stop", "Succeeded")
    assert not broker.exists(ready_key(azure.nodes(NAME)[0].node_id))

    clock.advance(1)
    ask(azure, "Start")
    tick(reconciler, azure)
    (spec, again) = azure.runs("instance")
    (workstation,) = azure.containers("instance")
    assert workstation.labels[GENERATION] == azure.containers("agent")[0].labels[GENERATION] == "2"
    assert again.volumes == spec.volumes  # the same home
    assert record(azure)["ports"] == before["ports"]  # the same URLs: the host ports it had were free
    broker.set(ready_key(azure.nodes(NAME)[0].node_id), 1)
    tick(reconciler, azure)
    assert record(azure)["state"] == "Running" and operation(azure) == ("Start", "Succeeded")
    # its VM was billed from the create until the stop was done, and again from the start (the cost meter's events)
    with store.reading() as repo:
        billed = [(e.kind, e.data.get("state")) for e in events.all_of(repo, None, events.INSTANCE_KINDS)]
        stopped = [e.time for e in events.all_of(repo, None, (events.kinds.INSTANCE_STOPPED,))]
    assert billed == [("instance.started", "Creating"), ("instance.stopped", "Stopped"),
                      ("instance.started", "Starting")]
    assert stopped == [clock() - timedelta(seconds=1)]


def test_delete_removes_the_containers_then_the_home_volume_and_the_row(azure, reconciler, broker, fake, clock):
    running(azure, reconciler, broker, fake)
    containers = {c.id for c in azure.containers("instance") + azure.containers("agent")}
    assert fake.volumes({STACK: "unit", COMPUTE: NAME})
    clock.advance(1)
    ask(azure, "Delete")
    tick(reconciler, azure)
    assert containers <= azure.removed() and record(azure)["state"] == "Deleting"
    tick(reconciler, azure)  # no container left: the home goes, then the row

    assert azure.compute(NAME) is None and azure.nodes(NAME) == []
    assert fake.volumes({STACK: "unit"}) == []
    assert azure.operations(azure.key(NAME)) == [("Create", "Succeeded"), ("Delete", "Succeeded")]


def test_a_workstation_that_cannot_start_fails_the_create_with_the_engines_reason(azure, reconciler, fake, clock):
    fake.fail_next_run(ValidationFailed("Image not found: amlemu/compute-instance. Build it with `make up`."),
                       labels={ROLE: "instance"})
    create(azure)
    tick(reconciler, azure)

    row = azure.compute(NAME)
    assert row.instance["state"] == "CreateFailed" and operation(azure) == ("Create", "CreateFailed")
    assert row.provisioning_state == "Failed"
    (error,) = row.provisioning_errors
    assert error["error"]["code"] == "ComputeInstanceFailed"
    assert error["error"]["message"] == f"The container instance of compute instance {NAME} could not start: " \
                                        "Image not found: amlemu/compute-instance. Build it with `make up`."
    assert azure.operations(azure.key(NAME)) == [("Create", "Failed")]
    assert azure.containers("instance") == [] and azure.runs("agent") == []  # the agent's start was not tried
