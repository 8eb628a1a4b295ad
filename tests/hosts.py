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
import random
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


def _taken_subnets(client: docker.DockerClient) -> list[ipaddress.IPv4Network]:
    """The engine's networks' subnets and the machine's routes: a lab's subnet must meet none of them."""
    taken = [ipaddress.ip_network(config["Subnet"], strict=False) for network in client.networks.list()
             for config in (client.api.inspect_network(network.id).get("IPAM") or {}).get("Config") or []
             if config.get("Subnet") and ":" not in config["Subnet"]]
    with open("/proc/net/route") as routes:
        for line in list(routes)[1:]:
            fields = line.split()
            destination, mask = (ipaddress.IPv4Address(int(f, 16).to_bytes(4, "little")) for f in fields[1:8:6])
            if int(mask):
                taken.append(ipaddress.ip_network(f"{destination}/{mask}", strict=False))
    return taken


def free_subnet(client: docker.DockerClient) -> str:
    """A /24 in 10.213.0.0/16 that no network of the engine's or route of the machine's meets."""
    taken = _taken_subnets(client)
    candidates = [ipaddress.ip_network(f"10.213.{third}.0/24") for third in random.sample(range(256), 256)]
    return str(next(c for c in candidates if not any(c.overlaps(t) for t in taken)))


class StandInHosts:
    """Starts hosts on one private network and removes them, their storage and the network at the end. With
    `fixed_subnet`, the network has a subnet of the test's choosing (free_subnet): then a reconnected host gets its
    own address back, as a machine back on its network does, and `reserve` gives addresses that the test hands to
    containers of its own (`docker network connect --ip`)."""

    def __init__(self, client: docker.DockerClient, keys: KeyPair, image: str = HOST_IMAGE,
                 fixed_subnet: bool = False):
        self.client, self.keys, self.image = client, keys, image
        self.label = f"tests-hosts-{uuid.uuid4().hex[:10]}"
        self.subnet = free_subnet(client) if fixed_subnet else None
        ipam = docker.types.IPAMConfig(pool_configs=[docker.types.IPAMPool(subnet=self.subnet)]) \
            if self.subnet else None
        self.network = self.client.networks.create(self.label, driver="bridge", internal=True, ipam=ipam,
                                                   labels={"amlemu.it": "true", "amlemu.stack": self.label})
        self.hosts: list[StandInHost] = []
        self._reserved = 0

    def reserve(self) -> str:
        """An address of the fixed subnet that no host will get: counted down from its top (the engine gives hosts
        the lowest free ones), below `unused_address`."""
        assert self.subnet, "addresses are reserved on a fixed subnet only"
        self._reserved += 1
        return str(ipaddress.ip_network(self.subnet)[-2 - self._reserved])

    def join(self, container_id: str, address: str) -> None:
        """A container of the test's own on the network at a reserved address."""
        self.network.connect(container_id, ipv4_address=address)

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

    def redis(self) -> str:
        """A Redis on the lab's network, where the hosts' nodes reach the stack's: its address (it goes with the lab)."""
        box = self.client.containers.run("amlemu/redis:latest", detach=True, network=self.network.name,
                                         labels={"amlemu.it": "true", "amlemu.stack": self.label})
        box.reload()
        return box.attrs["NetworkSettings"]["Networks"][self.network.name]["IPAddress"]

    def unused_address(self) -> str:
        """An address on the private network that no host has: connecting there finds no one (no route)."""
        self.network.reload()
        subnet = self.network.attrs["IPAM"]["Config"][0]["Subnet"]
        return str(ipaddress.ip_network(subnet)[-2])

    def load(self, host: StandInHost, image: str) -> None:
        """Copy a local image into the host's engine (it cannot pull either)."""
        with host.engine() as engine:
            engine.images.load(b"".join(self.client.images.get(image).save(named=True)))

    def sleeper(self, host: StandInHost) -> str:
        """A tiny image on the host's engine holding /usr/bin/sleep and the libraries it loads, imported from the host's
        own files (no copy from this machine): for a container that just runs there. Its name."""
        name = "amlemu-tests/sleeper:latest"
        files = "usr/bin/sleep usr/lib/x86_64-linux-gnu/libc.so.6 lib64/ld-linux-x86-64.so.2"
        made = self.client.containers.get(host.container_id).exec_run(
            ["bash", "-c", f"tar -C / -chf - {files} | docker import - {name}"])
        assert made.exit_code == 0, made.output.decode(errors="replace")
        return name

    def stop(self, host: StandInHost) -> None:
        """The host goes away as a machine does: its engine and sshd with it."""
        self.client.containers.get(host.container_id).kill()

    def cut_off(self, host: StandInHost) -> None:
        """The host stays up, its containers running, but the network no longer reaches it (a cable pulled)."""
        self.network.disconnect(host.container_id)

    def freeze(self, host: StandInHost, frozen: bool = True) -> None:
        """The host stays on the network but its sshd gets nothing more (its packets dropped, as a machine that hangs
        or a firewall that drops): established connections wait rather than fail. `frozen` False undoes it."""
        rule = ["INPUT", "-p", "tcp", "--dport", str(host.ssh_port), "-j", "DROP"]
        result = self.client.containers.get(host.container_id).exec_run(["iptables", "-I" if frozen else "-D", *rule])
        assert result.exit_code == 0, result.output.decode(errors="replace")

    def reconnect(self, host: StandInHost) -> StandInHost:
        """Back on the network: the host as it is now (on a fixed subnet at the address it had; else the engine gives
        the lowest free address, most often the one it had)."""
        self.network.connect(host.container_id, ipv4_address=host.address if self.subnet else None)
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
            self.network.reload()
            for container in self.network.containers:  # a test's own, joined at a reserved address
                self.network.disconnect(container, force=True)
            self.network.remove()
        except NotFound:
            pass


@contextmanager
def stand_in_hosts(folder: Path, fixed_subnet: bool = False) -> Iterator[StandInHosts]:
    """StandInHosts with a fresh key pair in `folder`; skips when Docker or the image is missing."""
    client = engine_with(HOST_IMAGE, "A stand-in host", "--hosts", timeout=300)
    hosts = StandInHosts(client, key_pair(folder), fixed_subnet=fixed_subnet)
    try:
        yield hosts
    finally:
        hosts.close()
        client.close()


# A stack's services on the hosts' network too: nodes there reach its api and Redis, its controller the hosts' SSH.
STACK_SERVICES = ("api", "redis", "controller")
API_PORT = 8443  # the api's own port in its container, where the hosts reach it


def stack_addresses(lab: StandInHosts) -> dict[str, str]:
    """Reserved addresses on the lab's network for a stack's api, Redis and controller."""
    return {service: lab.reserve() for service in STACK_SERVICES}


def stack_env(addresses: dict[str, str]) -> dict[str, str]:
    """What a stack is started with for nodes on the hosts to reach it (README: attached compute)."""
    return {"AMLEMU_NODE_API_URL": f"https://{addresses['api']}:{API_PORT}",
            "AMLEMU_ADVERTISED_REDIS_URL": f"redis://{addresses['redis']}:6379/0"}


def join_stack(lab: StandInHosts, project: str, addresses: dict[str, str]) -> None:
    """The composed stack's services on the lab's network at their reserved addresses (`docker network connect
    --ip`), as README tells a user whose hosts are on a Docker network of the machine."""
    for service, address in addresses.items():
        (container,) = lab.client.containers.list(filters={"label": [f"com.docker.compose.project={project}",
                                                                     f"com.docker.compose.service={service}"]})
        lab.join(container.id, address)
