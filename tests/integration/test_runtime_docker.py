"""Contract tests of DockerRuntime against the real engine.

Probe containers come from the local Redis image, whose entrypoint is plain (the emulator image's is
`python -m emulator`), so any shell command can run in them. Every probe carries the test's stack
label, which the `stack` fixture sweeps afterwards.
"""

import socket
import uuid
from datetime import UTC, datetime, timedelta

import docker
import pytest

from emulator.errors import RuntimeUnavailable, ValidationFailed
from emulator.runtime.base import MANAGED, ContainerSpec, Observed
from emulator.runtime.docker import DockerRuntime
from tests.waiting import wait_until

PROBE_IMAGE = "amlemu/redis:latest"
MIB = 1024 ** 2
SLEEP = ["sleep", "300"]


@pytest.fixture
def probe(stack, runtime: DockerRuntime):
    """Run a probe container of this test's stack: probe(command, **spec fields) -> Observed."""
    def run(command: list[str] = SLEEP, labels: dict[str, str] | None = None, **fields) -> Observed:
        spec = ContainerSpec(name=f"amlemu-{stack}-probe-{uuid.uuid4().hex[:8]}", image=PROBE_IMAGE,
                             command=command, labels={"amlemu.stack": stack, "amlemu.role": "probe",
                                                      **(labels or {})}, **fields)
        return runtime.run(spec)
    return run


def inspect(docker_client: docker.DockerClient, container_id: str) -> dict:
    return docker_client.api.inspect_container(container_id)


def observed(runtime: DockerRuntime, stack: str, container_id: str) -> Observed | None:
    return next((c for c in runtime.list({"amlemu.stack": stack}) if c.id == container_id), None)


def stopped(runtime: DockerRuntime, stack: str, container_id: str) -> Observed | None:
    found = observed(runtime, stack, container_id)
    return found if found is not None and not found.running else None


def test_run_applies_labels_limits_and_hardening(probe, docker_client, docker_network, stack):
    obs = probe(labels={"extra": "yes"}, cpus=0.5, memory_bytes=256 * MIB, env={"AMLEMU_PROBE": "42"},
                network=docker_network)

    assert obs.running and obs.exit_code == 0 and not obs.oom_killed
    assert obs.name.startswith(f"amlemu-{stack}-probe-")
    assert obs.labels[MANAGED] == "true"
    assert obs.labels["amlemu.stack"] == stack and obs.labels["extra"] == "yes"

    info = inspect(docker_client, obs.id)
    assert info["Config"]["Labels"][MANAGED] == "true"
    assert {"amlemu.stack": stack, "amlemu.role": "probe", "extra": "yes"}.items() <= \
        info["Config"]["Labels"].items()
    host = info["HostConfig"]
    assert host["NanoCpus"] == 500_000_000
    assert host["Memory"] == 256 * MIB
    assert host["Init"] is True
    assert host["Privileged"] is False
    assert "no-new-privileges" in (host["SecurityOpt"] or [])
    assert not host.get("CapAdd")
    assert "AMLEMU_PROBE=42" in info["Config"]["Env"]
    assert info["Config"]["Cmd"] == SLEEP
    networks = info["NetworkSettings"]["Networks"]
    assert list(networks) == [docker_network]
    assert obs.ip and obs.ip == networks[docker_network]["IPAddress"]


def test_cpus_beyond_the_host_get_the_whole_host(probe, runtime, docker_client):
    obs = probe(cpus=1024.0)
    assert inspect(docker_client, obs.id)["HostConfig"]["NanoCpus"] == int(runtime.host_cpus * 1e9)


def test_no_limits_means_unlimited(probe, docker_client):
    host = inspect(docker_client, probe().id)["HostConfig"]
    assert not host["NanoCpus"] and not host["Memory"]
    assert host["Init"] is True and host["Privileged"] is False


def test_mounts_and_user(probe, docker_client, tmp_path):
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    obs = probe(command=["sh", "-c", "id -u > /mnt/shared/uid; exec sleep 300"],
                mounts={str(shared): "/mnt/shared"}, user="4242:4242")

    info = inspect(docker_client, obs.id)
    assert info["Config"]["User"] == "4242:4242"
    assert any(m["Source"] == str(shared) and m["Destination"] == "/mnt/shared" and m["RW"]
               for m in info["Mounts"])
    uid = wait_until(lambda: (shared / "uid").exists() and (shared / "uid").read_text().strip(),
                     timeout=20, message="the probe to write through the bind mount")
    assert uid == "4242"


def test_a_shallow_mount_is_read_only_and_asks_the_engine_to_leave_out_the_mounts_below_it(probe, runtime,
                                                                                            docker_client, tmp_path):
    """As nodes see the engine's storage: its own files, not the containers' file systems mounted inside it."""
    (tmp_path / "file").write_text("seen")
    outer = probe(shallow_mounts={str(tmp_path): "/mnt/outer"})
    assert runtime.exec(outer.id, ["cat", "/mnt/outer/file"]) == (0, "seen")
    assert runtime.exec(outer.id, ["sh", "-c", "touch /mnt/outer/new"])[0] != 0  # read-only
    assert not (tmp_path / "new").exists()
    (mount,) = inspect(docker_client, outer.id)["HostConfig"]["Mounts"]
    assert mount["BindOptions"] == {"NonRecursive": True} and mount["ReadOnly"]


def test_the_engine_tells_its_data_root_and_each_containers_writable_layer_is_under_it(probe, runtime):
    root, layer = runtime.data_root(), probe().layer
    assert root is not None and root.is_absolute()
    assert layer is None or layer.startswith(f"{root}/")  # storage drivers without an upper folder have none


def test_list_filters_on_every_label_and_only_sees_managed_containers(probe, runtime, stack, docker_client):
    first = probe(labels={"amlemu.node": "a", "flavour": "x"})
    second = probe(labels={"amlemu.node": "b", "flavour": "x"})
    # Same stack label but not started by the runtime: not managed, so never listed.
    docker_client.containers.run(PROBE_IMAGE, SLEEP, detach=True, labels={"amlemu.stack": stack},
                                 name=f"amlemu-{stack}-unmanaged")

    assert {c.id for c in runtime.list({"amlemu.stack": stack})} == {first.id, second.id}
    assert {c.id for c in runtime.list({"amlemu.stack": stack, "flavour": "x"})} == {first.id, second.id}
    assert [c.id for c in runtime.list({"amlemu.stack": stack, "amlemu.node": "b"})] == [second.id]
    assert runtime.list({"amlemu.stack": stack, "amlemu.node": "c"}) == []
    assert runtime.list({"amlemu.stack": f"{stack}-other"}) == []
    listed = {c.id: c for c in runtime.list({"amlemu.stack": stack})}
    assert listed[first.id].labels["amlemu.node"] == "a" and listed[first.id].running


def test_find_tells_when_the_container_started_to_the_microsecond_and_the_listing_leaves_it_out(probe, runtime,
                                                                                              stack):
    before = datetime.now(UTC)
    obs = probe()
    found = runtime.find(obs.name)
    assert found.started_at is not None and before - timedelta(seconds=1) <= found.started_at <= datetime.now(UTC)
    assert observed(runtime, stack, obs.id).started_at is None  # one engine call for all: no inspect


def test_list_includes_stopped_containers_with_their_exit(probe, runtime, stack):
    obs = probe(command=["sh", "-c", "exit 3"])
    done = wait_until(lambda: stopped(runtime, stack, obs.id), timeout=20, message="the probe to exit")
    assert done.exit_code == 3 and not done.oom_killed


def test_oom_kill_is_observed(probe, runtime, stack):
    obs = probe(command=["sh", "-c", "x=$(head -c 200000000 /dev/zero | tr '\\0' a); echo survived"],
                memory_bytes=32 * MIB)
    done = wait_until(lambda: stopped(runtime, stack, obs.id), timeout=30, message="the probe to be OOM killed")
    # Docker 20.10 sets State.OOMKilled from an event that can land after the exit under load, so the
    # flag alone is not proof; the kernel's SIGKILL is (the job runner reads 137 without a kill as OOM).
    assert done.exit_code == 137


def test_sigterm_reaches_the_process_through_init(probe, runtime, stack):
    # The trap proves the signal got to the command, not just to the init process.
    obs = probe(command=["sh", "-c", "trap 'exit 7' TERM; echo trapped; while :; do sleep 0.1; done"])
    wait_until(lambda: "trapped" in runtime.logs(obs.id), timeout=20, message="the probe to set its trap")
    runtime.signal(obs.id, "SIGTERM")
    done = wait_until(lambda: stopped(runtime, stack, obs.id), timeout=20, message="SIGTERM to stop the probe")
    assert done.exit_code == 7


def test_sigkill_stops_at_once(probe, runtime, stack):
    obs = probe(command=["sh", "-c", "trap '' TERM; while :; do sleep 0.1; done"])
    runtime.signal(obs.id, "SIGKILL")
    done = wait_until(lambda: stopped(runtime, stack, obs.id), timeout=20, message="SIGKILL to stop the probe")
    assert done.exit_code == 137


def test_signal_is_a_no_op_on_stopped_or_unknown_containers(probe, runtime, stack):
    obs = probe()
    runtime.signal(obs.id, "SIGKILL")
    wait_until(lambda: stopped(runtime, stack, obs.id), timeout=20, message="the probe to stop")
    runtime.signal(obs.id, "SIGTERM")  # 409 from the engine: not running
    runtime.signal(obs.id, "SIGKILL")
    runtime.signal("0" * 64, "SIGTERM")  # 404: no such container


def test_remove_is_idempotent(probe, runtime, stack, docker_client):
    running = probe()
    exited = probe(command=["true"])
    wait_until(lambda: stopped(runtime, stack, exited.id), timeout=20, message="the probe to exit")

    runtime.remove(running.id)  # forced: a running container goes too
    runtime.remove(exited.id)
    assert runtime.list({"amlemu.stack": stack}) == []
    with pytest.raises(docker.errors.NotFound):
        docker_client.containers.get(running.id)
    runtime.remove(running.id)
    runtime.remove(exited.id)
    runtime.remove("0" * 64)


def test_logs_carry_stdout_and_stderr(probe, runtime):
    obs = probe(command=["sh", "-c", "echo out-line; echo err-line >&2; exec sleep 300"])
    logs = wait_until(lambda: "out-line" in (text := runtime.logs(obs.id)) and "err-line" in text and text,
                      timeout=20, message="the probe's stdout and stderr")
    assert logs.split() in (["out-line", "err-line"], ["err-line", "out-line"])  # two streams: no order


def test_logs_honour_tail(probe, runtime):
    obs = probe(command=["sh", "-c", "for i in 1 2 3 4 5; do echo n$i; done; exec sleep 300"])
    wait_until(lambda: "n5" in runtime.logs(obs.id), timeout=20, message="the probe's output")
    assert runtime.logs(obs.id).split() == ["n1", "n2", "n3", "n4", "n5"]
    assert runtime.logs(obs.id, tail=2).split() == ["n4", "n5"]


def test_logs_of_an_unknown_container_are_empty(runtime):
    assert runtime.logs("0" * 64) == ""


def test_name_clash_is_a_runtime_error(probe, runtime, stack):
    obs = probe()
    spec = ContainerSpec(name=obs.name, image=PROBE_IMAGE, command=SLEEP, labels={"amlemu.stack": stack})
    with pytest.raises(RuntimeUnavailable):
        runtime.run(spec)


def test_missing_image_is_a_validation_error_with_a_build_hint(runtime, stack):
    spec = ContainerSpec(name=f"amlemu-{stack}-missing", image=f"amlemu/missing-{uuid.uuid4().hex[:8]}:latest",
                         command=SLEEP, labels={"amlemu.stack": stack})
    with pytest.raises(ValidationFailed, match="make up"):
        runtime.run(spec)


def test_published_ports_are_on_loopback_on_the_wanted_host_port_or_one_the_engine_picks(probe, docker_network,
                                                                                           runtime, stack):
    first = probe(network=docker_network, ports={6379: None})
    host_port = first.ports[6379]
    assert host_port and inspect(runtime.client, first.id)["HostConfig"]["PortBindings"]["6379/tcp"][0]["HostIp"] \
        == "127.0.0.1"
    taken = probe(network=docker_network, ports={6379: host_port})  # held by `first`: another port, no error
    assert taken.running and taken.ports[6379] not in (None, host_port)
    assert len([c for c in runtime.list({"amlemu.stack": stack}) if c.ports.get(6379)]) == 2  # no half-made one
    runtime.remove(first.id)
    wanted = probe(network=docker_network, ports={6379: host_port})  # free again: the same port as before
    assert wanted.ports[6379] == host_port


# Connects to each host:port given, with a short timeout, and prints whether it opened.
CONNECT = ("import socket, sys\n"
           "for target in sys.argv[1:]:\n"
           "    host, port = target.rsplit(':', 1)\n"
           "    try:\n"
           "        socket.create_connection((host, int(port)), timeout=2).close()\n"
           "        print(target, 'open')\n"
           "    except OSError as exc:\n"
           "        print(target, 'closed', exc)\n")


def _connects(probe, runtime: DockerRuntime, network: str, targets: list[str]) -> dict[str, bool]:
    checker = probe(["python3", "-c", CONNECT, *targets], network=network)
    runtime.wait(checker.id)
    lines = [line.split() for line in runtime.logs(checker.id).splitlines() if line.strip()]
    return {words[0]: words[1] == "open" for words in lines}


def test_a_sealed_network_reaches_its_peers_but_not_the_hosts_ports(probe, runtime, docker_client, docker_network,
                                                                     stack):
    """The host listens on all its addresses. From a plain bridge (an `internal` one too) its gateway leads to
    every one of them; a sealed bridge has no address of the host's: its containers reach each other only."""
    listener = socket.create_server(("0.0.0.0", 0))
    port = listener.getsockname()[1]
    sealed = f"amlemu-{stack}-sealed"
    runtime.ensure_network(sealed, {"amlemu.stack": stack}, sealed=True)
    try:
        gateway = docker_client.networks.get(docker_network).attrs["IPAM"]["Config"][0]["Gateway"]
        own_gateway = docker_client.networks.get(sealed).attrs["IPAM"]["Config"][0]["Gateway"]
        peer = probe(["python3", "-m", "http.server", "8000"], network=sealed)
        wait_until(lambda: runtime.exec(peer.id, ["python3", "-c", CONNECT, "127.0.0.1:8000"])[1].split()[1:2]
                   == ["open"], timeout=30, message="the peer's server never listened")
        host_ports = [f"{gateway}:{port}", f"{own_gateway}:{port}"]
        assert _connects(probe, runtime, docker_network, host_ports[:1]) == {host_ports[0]: True}  # what is shut
        assert _connects(probe, runtime, sealed, [*host_ports, f"{peer.name}:8000"]) \
            == {host_ports[0]: False, host_ports[1]: False, f"{peer.name}:8000": True}
    finally:
        listener.close()
        for container in runtime.list({"amlemu.stack": stack}):
            runtime.remove(container.id)
        runtime.remove_network(sealed)

