"""The runtime ports: what the emulator asks of a container engine, split by resource (containers, networks,
volumes). Docker implements them; runtime/fake.py too, in memory, for tests."""

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Protocol

from emulator.runtime.labels import MANAGED, ROLES  # noqa: F401 (re-exported for the runtime's callers)


@dataclass(frozen=True)
class ContainerSpec:
    name: str
    image: str
    command: list[str]
    labels: dict[str, str]
    env: dict[str, str] = field(default_factory=dict)
    cpus: float | None = None
    memory_bytes: int | None = None
    gpus: int = 0
    network: str | None = None
    networks: tuple[str, ...] = ()  # more networks to join, after `network`
    network_of: str | None = None  # instead of `network`: share this container's network namespace
    mounts: dict[str, str] = field(default_factory=dict)  # host path -> container path
    read_only: tuple[str, ...] = ()  # container paths of mounts the container may not write
    user: str | None = None
    entrypoint: list[str] | None = None  # None: the image's own
    working_dir: str | None = None
    volumes: dict[str, str] = field(default_factory=dict)  # named volume -> container path
    # Container ports published on 127.0.0.1 -> the host port wanted (kept across restarts), or None: the engine
    # picks one, as it also does when the wanted one is taken.
    ports: dict[int, int | None] = field(default_factory=dict)
    drop_capabilities: bool = False  # no Linux capabilities at all (a workstation that runs no root process)
    pids_limit: int | None = None  # processes and threads the container may have at once (a fork bomb stops there)
    # Host path -> container path, read-only and without the mounts below it (the engine's own storage, where every
    # running container's file system is mounted: a copy of those would keep them busy after their container went).
    shallow_mounts: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Observed:
    id: str
    name: str
    labels: dict[str, str]
    running: bool
    exit_code: int | None
    oom_killed: bool
    ip: str | None
    ports: dict[int, int] = field(default_factory=dict)  # container port -> its port on 127.0.0.1
    started_at: datetime | None = None  # when it last started (`find` knows it; the listing does not)
    layer: str | None = None  # its writable layer's folder on the Docker host, where the storage driver has one


@dataclass(frozen=True)
class Exit:
    code: int
    oom_killed: bool
    refused_forks: int = 0  # forks the kernel refused the job at its pids limit, as its shell wrote on leaving


class Containers(Protocol):
    def run(self, spec: ContainerSpec) -> Observed: ...
    # `managed` False: containers the emulator did not start too (the stack's own services, by their labels).
    def list(self, labels: dict[str, str], managed: bool = True) -> list[Observed]: ...
    def find(self, name: str) -> Observed | None: ...
    def signal(self, container_id: str, signal: str) -> None: ...
    def remove(self, container_id: str) -> None: ...
    def logs(self, container_id: str, tail: int = 100) -> str: ...
    def wait(self, container_id: str) -> Exit: ...
    def exec(self, container_id: str, command: Sequence[str]) -> tuple[int, str]: ...
    # Processes and threads the running container holds now (None: not running, or the engine cannot tell).
    def processes(self, container_id: str) -> int | None: ...
    def has_gpus(self) -> bool: ...


class Networks(Protocol):
    # `sealed`: the host has no address on it (containers there reach each other only: not the host's ports, not
    # the internet), for the networks user code runs on.
    def ensure_network(self, name: str, labels: dict[str, str], sealed: bool = False) -> None: ...
    def remove_network(self, name: str) -> None: ...
    # Join a running container to a network under `alias` as well as its name: nothing if it is there already.
    def join_network(self, container_id: str, network: str, alias: str) -> None: ...
    # Take a container off a network: nothing if it is not there (or gone).
    def leave_network(self, container_id: str, network: str) -> None: ...
    # The managed networks with all these labels: name -> its labels.
    def networks(self, labels: dict[str, str]) -> dict[str, dict[str, str]]: ...


class Volumes(Protocol):
    """Volumes are made by `Containers.run` (ContainerSpec.volumes); only listing and removal are asked here."""
    def volumes(self, labels: dict[str, str]) -> "list[str]": ...
    def remove_volume(self, name: str) -> None: ...


class Runtime(Containers, Networks, Volumes, Protocol):
    """All three, for the callers that need them together (the controller, the CLI's `down`)."""
