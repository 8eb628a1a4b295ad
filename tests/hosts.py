"""Stand-in remote hosts for the tests of attached compute: containers of `amlemu/host` (images/host: Debian's
docker.io and openssh-server on the emulator's base image), each running its own Docker engine and sshd, on a
private network the test makes, with an SSH key pair the test generates. They are test infrastructure only: they
run with what an engine needs (every capability, no seccomp or AppArmor profile, all devices, the cgroup tree
writable), which user code never gets. Not `privileged`: an engine that itself runs without CAP_SYS_RESOURCE (as
here) cannot grant it, and refuses to start privileged containers.

Nothing is published: the tests reach the hosts at their addresses on the private network, which is internal (no
route out of it). Each host's engine also listens on tcp://<address>:2375, on that network only, so that a test can
load images into it and look at what the emulator left there. Everything made is labelled and removed at the end,
the hosts' engine storage (an anonymous volume each) included."""

import ipaddress
import os
import uuid
from collections.abc import Iterator
from contextlib import closing, contextmanager
from dataclasses import dataclass, replace
from pathlib import Path

import docker
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from docker.errors import APIError, NotFound

from tests.cleanup import engine_with
from tests.waiting import wait_until

HOST_IMAGE = os.environ.get("AMLEMU_HOST_IMAGE", "amlemu/host:latest")
USER = "azureuser"
ENGINE_PORT = 2375
# Every capability but SYS_RESOURCE (see above): an engine inside needs mounts, networks, devices, cgroups.
CAPABILITIES = ["AUDIT_CONTROL", "AUDIT_WRITE", "CHOWN", "DAC_OVERRIDE", "DAC_READ_SEARCH", "FOWNER", "FSETID",
                "IPC_LOCK", "IPC_OWNER", "KILL", "LEASE", "LINUX_IMMUTABLE", "MAC_ADMIN", "MAC_OVERRIDE", "MKNOD",
                "NET_ADMIN", "NET_BIND_SERVICE", "NET_BROADCAST", "NET_RAW", "SETFCAP", "SETGID", "SETPCAP", "SETUID",
                "SYSLOG", "SYS_ADMIN", "SYS_BOOT", "SYS_CHROOT", "SYS_MODULE", "SYS_NICE", "SYS_PACCT", "SYS_PTRACE",
                "SYS_RAWIO", "SYS_TIME", "SYS_TTY_CONFIG"]
ENGINE_RIGHTS = {"cap_add": CAPABILITIES, "security_opt": ["seccomp=unconfined", "apparmor=unconfined"],
                 "device_cgroup_rules": ["a *:* rwm"],
                 "volumes": {"/sys/fs/cgroup": {"bind": "/sys/fs/cgroup", "mode": "rw"}}}


@dataclass(frozen=True)
class KeyPair:
    private_pem: str  # OpenSSH's own format, as `ssh-keygen -t rsa` writes it
    public_line: str  # "ssh-rsa AAAA... comment", an authorized_keys line
    private_file: Path  # the private key in a 0600 file, for the SDK's ssh_private_key_file


def key_pair(folder: Path, name: str = "id_rsa") -> KeyPair:
    """An RSA key pair (Azure's attach docs ask for `ssh-keygen -t rsa -b 2048`), the private half in `folder`."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    private = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.OpenSSH,
                                serialization.NoEncryption()).decode()
    public = key.public_key().public_bytes(serialization.Encoding.OpenSSH,
                                           serialization.PublicFormat.OpenSSH).decode() + " amlemu-tests"
    path = folder / name
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as file:
        file.write(private)
    return KeyPair(private, public, path)


@dataclass(frozen=True)
class StandInHost:
    name: str
    container_id: str
    address: str  # on the private network, reachable from this machine
    ssh_port: int = 22
    username: str = USER

    @property
    def engine_url(self) -> str:
        return f"tcp://{self.address}:{ENGINE_PORT}"

    @contextmanager
    def engine(self) -> Iterator[docker.DockerClient]:
        """A client of the host's own engine."""
        with closing(docker.DockerClient(base_url=self.engine_url, timeout=120)) as client:
            yield client


class StandInHosts:
    """Starts hosts on one private network and removes them, their storage and the network at the end."""

    def __init__(self, client: docker.DockerClient, keys: KeyPair, image: str = HOST_IMAGE):
        self.client, self.keys, self.image = client, keys, image
        self.label = f"tests-hosts-{uuid.uuid4().hex[:10]}"
        self.network = self.client.networks.create(self.label, driver="bridge", internal=True,
                                                   labels={"amlemu.it": "true", "amlemu.stack": self.label})
        self.hosts: list[StandInHost] = []

    def start(self, count: int = 1, password: str | None = None) -> list[StandInHost]:
        started = [self._run(password) for _ in range(count)]
        for host in started:
            wait_until(lambda h=host: self._ready(h), timeout=90, message=f"stand-in host {host.name} to be ready")
        self.hosts.extend(started)
        return started

    def _run(self, password: str | None) -> StandInHost:
        name = f"{self.label}-{len(self.hosts) + 1}-{uuid.uuid4().hex[:4]}"
        env = {"AUTHORIZED_KEY": self.keys.public_line, "ENGINE_TCP": "1", "ADMIN_USER": USER}
        if password:
            env["ADMIN_PASSWORD"] = password
        container = self.client.containers.run(
            self.image, name=name, hostname=name, detach=True, network=self.network.name, environment=env,
            labels={"amlemu.it": "true", "amlemu.stack": self.label}, **ENGINE_RIGHTS)
        container.reload()
        address = container.attrs["NetworkSettings"]["Networks"][self.network.name]["IPAddress"]
        return StandInHost(name=name, container_id=container.id, address=address)

    def _ready(self, host: StandInHost) -> bool:
        container = self.client.containers.get(host.container_id)
        if container.status != "running":
            raise AssertionError(f"{host.name} stopped: {container.logs(tail=20).decode(errors='replace')}")
        engine = container.exec_run(["docker", "info", "--format", "{{.ServerVersion}}"]).exit_code == 0
        sshd = container.exec_run(["bash", "-c", "exec 3<>/dev/tcp/127.0.0.1/22"]).exit_code == 0
        return engine and sshd

    def unused_address(self) -> str:
        """An address on the private network that no host has: connecting there finds no one (no route)."""
        self.network.reload()
        subnet = self.network.attrs["IPAM"]["Config"][0]["Subnet"]
        return str(ipaddress.ip_network(subnet)[-2])

    def load(self, host: StandInHost, image: str) -> None:
        """Copy a local image into the host's engine (it cannot pull either)."""
        with host.engine() as engine:
            engine.images.load(b"".join(self.client.images.get(image).save(named=True)))

    def stop(self, host: StandInHost) -> None:
        """The host goes away as a machine does: its engine and sshd with it."""
        self.client.containers.get(host.container_id).kill()

    def cut_off(self, host: StandInHost) -> None:
        """The host stays up, its containers running, but the network no longer reaches it (a cable pulled)."""
        self.network.disconnect(host.container_id)

    def reconnect(self, host: StandInHost) -> StandInHost:
        """Back on the network: the host as it is now (the engine gives the lowest free address, most often the one
        it had; a fixed one would need a subnet of the test's choosing, which could meet another's)."""
        self.network.connect(host.container_id)
        container = self.client.containers.get(host.container_id)
        back = replace(host, address=container.attrs["NetworkSettings"]["Networks"][self.network.name]["IPAddress"])
        self.hosts = [back if h.container_id == host.container_id else h for h in self.hosts]
        return back

    def close(self) -> None:
        for container in self.client.containers.list(all=True, filters={"label": f"amlemu.stack={self.label}"}):
            try:
                container.remove(force=True, v=True)
            except (NotFound, APIError):
                pass
        try:
            self.network.remove()
        except NotFound:
            pass


@contextmanager
def stand_in_hosts(folder: Path) -> Iterator[StandInHosts]:
    """StandInHosts with a fresh key pair in `folder`; skips when Docker or the image is missing."""
    client = engine_with(HOST_IMAGE, "A stand-in host", "--hosts", timeout=300)
    hosts = StandInHosts(client, key_pair(folder))
    try:
        yield hosts
    finally:
        hosts.close()
        client.close()
