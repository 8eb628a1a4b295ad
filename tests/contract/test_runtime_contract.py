"""One behaviour suite for every runtime: what the emulator relies on, so FakeRuntime cannot drift from Docker.

A probe runs `sleep 300` unless told otherwise: on the fake, any command but `sh -c "exit N"` runs until it is
signalled or removed, so the same tests hold on both.
"""

import uuid
from datetime import UTC, datetime, timedelta

import pytest

from emulator.errors import RuntimeUnavailable, ValidationFailed
from emulator.runtime.base import MANAGED, Exit
from emulator.runtime.labels import COMPUTE, NETWORK, NODE, ROLE, STACK
from tests.waiting import wait_until

UNKNOWN = "0" * 64


def test_run_starts_a_managed_container_that_find_knows_by_name_and_id(runtime, probe, stack):
    before = datetime.now(UTC)
    obs = probe(labels={"flavour": "x"})

    assert obs.running and obs.exit_code == 0 and not obs.oom_killed
    assert obs.id and obs.name.startswith(f"amlemu-{stack}-")
    assert obs.labels == {MANAGED: "true", STACK: stack, ROLE: "probe", "flavour": "x"}
    assert obs.ip  # on the engine's default network
    assert before - timedelta(seconds=1) <= obs.started_at <= datetime.now(UTC)
    assert runtime.find(obs.name) == runtime.find(obs.id) == obs
    assert runtime.find(f"amlemu-{stack}-missing") is None


def test_list_filters_on_every_label_and_leaves_out_the_start_time(runtime, probe, stack):
    first = probe(labels={NODE: "a"})
    second = probe(labels={NODE: "b"})

    assert {c.id for c in runtime.list({STACK: stack})} == {first.id, second.id}
    assert {c.id for c in runtime.list({STACK: stack, ROLE: "probe"})} == {first.id, second.id}
    assert [c.id for c in runtime.list({STACK: stack, NODE: "b"})] == [second.id]
    assert runtime.list({STACK: stack, NODE: "c"}) == []
    assert runtime.list({STACK: f"{stack}-other"}) == []
    (listed,) = runtime.list({STACK: stack, NODE: "a"})
    assert listed.running and listed.labels[MANAGED] == "true" and listed.labels[NODE] == "a"
    assert listed.exit_code is None and listed.started_at is None  # the listing's shape: one call, no inspect
    assert listed.ip == first.ip


def test_a_taken_name_is_refused_until_the_container_is_removed(runtime, make_spec):
    spec = make_spec()
    first = runtime.run(spec)
    with pytest.raises(RuntimeUnavailable):
        runtime.run(spec)
    runtime.signal(first.id, "SIGKILL")
    runtime.wait(first.id)
    with pytest.raises(RuntimeUnavailable):  # stopped, still there: the name stays taken
        runtime.run(spec)
    runtime.remove(first.id)
    again = runtime.run(spec)
    assert again.running and again.id != first.id and again.name == spec.name


@pytest.mark.parametrize(("signal", "code"), [("SIGTERM", 143), ("SIGKILL", 137), ("SIGINT", 130)])
def test_a_signal_stops_the_container_with_128_plus_its_number(runtime, probe, stack, signal, code):
    obs = probe(ports={6379: None})

    # Docker's init ignores a signal that comes before it has set up its handlers (PID 1): seen under load, the
    # probe then slept its 300 s. A signal to a stopped container is a no-op, so it is sent until the probe stops.
    def stopped() -> bool:
        runtime.signal(obs.id, signal)
        return not runtime.find(obs.id).running
    wait_until(stopped, timeout=60, interval=0.5, message=f"the probe to stop on {signal}")

    assert runtime.wait(obs.id) == Exit(code=code, oom_killed=False)
    found = runtime.find(obs.id)
    assert not found.running and found.exit_code == code
    assert found.ip is None and found.ports == {}  # a stopped container holds no address and no port
    (listed,) = runtime.list({STACK: stack})
    assert not listed.running and listed.exit_code == code


def test_signal_leaves_stopped_and_unknown_containers_alone_and_refuses_a_bogus_one(runtime, probe):
    done = probe(["sh", "-c", "exit 3"])
    assert runtime.wait(done.id).code == 3
    runtime.signal(done.id, "SIGTERM")
    runtime.signal(done.id, "SIGKILL")
    assert runtime.find(done.id).exit_code == 3
    runtime.signal(UNKNOWN, "SIGTERM")

    alive = probe()
    with pytest.raises(RuntimeUnavailable):
        runtime.signal(alive.id, "SIGBOGUS")
    assert runtime.find(alive.id).running


@pytest.mark.parametrize("form", [
    {"command": ["sh", "-c", "exit 3"]},
    {"command": ["exit 3"], "entrypoint": ["/bin/sh", "-c"]},  # how the emulator starts a job's command
])
def test_a_command_that_exits_reports_its_code(runtime, make_spec, stack, form):
    obs = runtime.run(make_spec(**form))
    assert runtime.wait(obs.id) == Exit(code=3, oom_killed=False)
    assert runtime.find(obs.id).exit_code == 3
    assert [(c.running, c.exit_code) for c in runtime.list({STACK: stack})] == [(False, 3)]


def test_remove_forgets_the_container_running_or_not_and_again_is_harmless(runtime, probe, stack):
    running = probe()
    exited = probe(["sh", "-c", "exit 0"])
    runtime.wait(exited.id)

    runtime.remove(running.id)  # forced: a running container goes too
    runtime.remove(exited.id)
    assert runtime.find(running.id) is None and runtime.find(exited.name) is None
    assert runtime.list({STACK: stack}) == []
    runtime.remove(running.id)
    runtime.remove(exited.id)


def test_an_unknown_container_has_no_logs_and_cannot_be_waited_for_or_entered(runtime):
    runtime.remove(UNKNOWN)
    assert runtime.find(UNKNOWN) is None
    assert runtime.logs(UNKNOWN) == ""
    with pytest.raises(RuntimeUnavailable):
        runtime.wait(UNKNOWN)
    with pytest.raises(RuntimeUnavailable):
        runtime.exec(UNKNOWN, ["true"])


def test_exec_runs_in_a_running_container_only(runtime, probe):
    obs = probe()
    assert runtime.exec(obs.id, ["sh", "-c", "exit 4"]) == (4, "")
    assert runtime.logs(obs.id) == ""  # what exec printed is its own, not the container's
    runtime.signal(obs.id, "SIGKILL")
    runtime.wait(obs.id)
    with pytest.raises(RuntimeUnavailable):
        runtime.exec(obs.id, ["sh", "-c", "exit 4"])


def test_a_running_container_counts_its_processes_and_a_stopped_or_unknown_one_none(runtime, probe):
    obs = probe()
    assert runtime.processes(obs.id) >= 1  # its init and command at least
    runtime.signal(obs.id, "SIGKILL")
    runtime.wait(obs.id)
    assert runtime.processes(obs.id) is None
    assert runtime.processes(UNKNOWN) is None


def test_missing_image_is_a_validation_error_with_a_build_hint(runtime, make_spec, stack):
    with pytest.raises(ValidationFailed, match="make up"):
        runtime.run(make_spec(image=f"amlemu/missing-{uuid.uuid4().hex[:8]}:latest"))
    assert runtime.list({STACK: stack}) == []


def test_a_network_is_made_once_and_joined_by_containers(runtime, network, probe):
    name = network()
    network()  # again: no error, the same network
    first = probe(network=name)
    second = probe(network=name)
    assert first.ip and second.ip and first.ip != second.ip


def test_the_engines_own_bridge_network_is_always_there(probe):
    assert probe(network="bridge").ip  # a compute instance's workstation names it (controller/specs/instances.py)


def test_a_network_is_found_by_its_whole_name_only(runtime, network, probe, stack):
    longer = network("net-longer")  # its name contains the next one's: a substring match would find it
    name = network("net")
    assert probe(network=name).ip  # made, though a longer name held it
    runtime.remove_network(f"amlemu-{stack}-ne")  # no such network: neither of the others goes
    assert probe(network=longer).ip and probe(network=name).ip


def test_remove_network_waits_for_its_running_containers_and_again_is_harmless(runtime, network, probe):
    name = network()
    obs = probe(network=name)
    with pytest.raises(RuntimeUnavailable):
        runtime.remove_network(name)
    runtime.signal(obs.id, "SIGKILL")
    runtime.wait(obs.id)
    runtime.remove_network(name)  # a stopped container does not hold it
    runtime.remove_network(name)
    with pytest.raises(RuntimeUnavailable):  # gone: nothing can join it
        probe(network=name)


def test_a_container_can_share_a_running_containers_network(runtime, network, probe):
    host = probe(network=network())
    guest = probe(network_of=host.id)
    assert guest.running and guest.ip is None  # the namespace is the host's: the guest has no address of its own
    runtime.signal(host.id, "SIGKILL")
    runtime.wait(host.id)
    with pytest.raises(RuntimeUnavailable):
        probe(network_of=host.id)


def test_a_volume_is_made_on_first_use_with_its_owners_labels(runtime, probe, stack):
    volume = f"amlemu-{stack}-home"
    probe(labels={COMPUTE: "c1"}, volumes={volume: "/data"})
    probe(labels={COMPUTE: "c1"}, volumes={volume: "/data"})  # the same volume, not another

    assert runtime.volumes({STACK: stack}) == [volume]
    assert runtime.volumes({STACK: stack, COMPUTE: "c1"}) == [volume]
    assert runtime.volumes({STACK: stack, ROLE: "probe"}) == []  # a volume keeps its owner's labels only
    assert runtime.volumes({STACK: f"{stack}-other"}) == []
    with pytest.raises(RuntimeUnavailable):  # in use
        runtime.remove_volume(volume)
    for container in runtime.list({STACK: stack}):
        runtime.remove(container.id)
    runtime.remove_volume(volume)
    assert runtime.volumes({STACK: stack}) == []
    runtime.remove_volume(volume)


def test_published_ports_get_the_wanted_host_port_when_free_or_another(runtime, probe, stack):
    first = probe(ports={6379: None})
    host_port = first.ports[6379]
    assert host_port
    taken = probe(ports={6379: host_port})  # held by `first`: another port, no error
    assert taken.running and taken.ports[6379] not in (None, host_port)
    runtime.remove(first.id)
    assert probe(ports={6379: host_port}).ports == {6379: host_port}  # free again: honoured
    assert len([c for c in runtime.list({STACK: stack}) if c.ports.get(6379)]) == 2


def test_a_running_container_joins_another_network_once(runtime, network, probe, stack):
    first, second = network("join-a"), network("join-b")
    obs = probe(network=first)
    runtime.join_network(obs.id, second, "api")
    runtime.join_network(obs.id, second, "api")  # again: nothing changes, no error
    with pytest.raises(RuntimeUnavailable):  # it is on the second network now, as the engine sees it
        runtime.remove_network(second)
    with pytest.raises(RuntimeUnavailable):
        runtime.join_network(obs.id, f"amlemu-{stack}-no-such-network", "api")
    runtime.signal(obs.id, "SIGKILL")
    runtime.wait(obs.id)
    runtime.remove_network(second)


def test_networks_are_listed_by_label_and_a_container_leaves_one(runtime, network, probe, stack):
    first, second = network("list-a"), network("list-b")
    runtime.ensure_network(f"amlemu-{stack}-list-c", {STACK: stack, NETWORK: "jobs"}, sealed=True)
    assert set(runtime.networks({STACK: stack})) >= {first, second, f"amlemu-{stack}-list-c"}
    assert runtime.networks({STACK: stack, NETWORK: "jobs"}) == {
        f"amlemu-{stack}-list-c": {MANAGED: "true", STACK: stack, NETWORK: "jobs"}}
    obs = probe(network=first)
    runtime.join_network(obs.id, second, "api")
    runtime.leave_network(obs.id, second)
    runtime.leave_network(obs.id, second)  # again: no error
    runtime.remove_network(second)  # nothing is on it any more, though the container still runs
    runtime.remove_network(f"amlemu-{stack}-list-c")
    assert second not in runtime.networks({STACK: stack}) and first in runtime.networks({STACK: stack})
