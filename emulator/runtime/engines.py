"""The emulator's own Docker engine and the attached hosts' engines as one runtime, for the passes that look after
clusters' nodes and jobs wherever they run (a cluster pooled over attached hosts: domain/compute/placement.py).

A listing asks every engine; what is then done to a container or a volume goes to the engine it was listed or
started on; a start goes to the host its spec names (labels.HOST), else to the local engine. Each host's engine
places and runs the containers itself: this only picks the engine, as a client of several remote engines does.
A host that stops answering lists nothing, so its nodes look lost, as they are (their jobs requeue). On each host,
what belongs to the attached compute itself (its own node and jobs) is left out: controller/host_nodes.py keeps it."""

from collections.abc import Callable, Mapping, Sequence

from emulator.runtime import labels
from emulator.runtime.base import ContainerSpec, Exit, Observed, Runtime
from emulator.runtime.hosts import UNREACHABLE, HostCheckFailed


class Engines:
    """`hosts`: the attached hosts' engines that answer now, by their compute's key; `lost(key)`: told when one of
    them stops answering mid-call."""

    def __init__(self, local: Runtime, hosts: Callable[[], Mapping[str, Runtime]],
                 lost: Callable[[str], None] = lambda _key: None):
        self.local, self.hosts, self.lost = local, hosts, lost
        self.where: dict[str, Runtime] = {}  # a container id or volume name on a host -> that host's engine

    def __getattr__(self, name):  # what only the local engine is asked (host_path, data_root, client, ...)
        return getattr(self.local, name)

    def _remote(self, ask: Callable[[str, Runtime], list]) -> list:
        found = []
        for key, engine in self.hosts().items():
            try:
                found += ask(key, engine)
            except UNREACHABLE:
                self.lost(key)
                self.where = {k: v for k, v in self.where.items() if v is not engine}
        return found

    def _on(self, name: str) -> Runtime:
        return self.where.get(name, self.local)

    # containers
    def run(self, spec: ContainerSpec) -> Observed:
        host = spec.labels.get(labels.HOST)
        if host is None:
            return self.local.run(spec)
        engine = self.hosts().get(host)
        if engine is None:
            raise HostCheckFailed("address", f"the attached host {host.rsplit('/', 1)[-1]} does not answer")
        engine.ensure_network(spec.network, {labels.STACK: spec.labels[labels.STACK],
                                             labels.COMPUTE_ID: spec.labels[labels.COMPUTE_ID]})
        container = engine.run(spec)
        self.where[container.id] = engine
        return container

    def list(self, wanted: dict[str, str], managed: bool = True) -> "list[Observed]":
        def theirs(key: str, engine: Runtime) -> "list[Observed]":
            found = [c for c in engine.list(wanted, managed) if c.labels.get(labels.COMPUTE_ID) != key]
            self.where.update((c.id, engine) for c in found)
            return found
        return self.local.list(wanted, managed) + self._remote(theirs)

    def find(self, name: str) -> Observed | None:
        return self.local.find(name)

    def signal(self, container_id: str, signal: str) -> None:
        self._on(container_id).signal(container_id, signal)

    def remove(self, container_id: str) -> None:
        self._on(container_id).remove(container_id)
        self.where.pop(container_id, None)

    def logs(self, container_id: str, tail: int = 100) -> str:
        return self._on(container_id).logs(container_id, tail)

    def wait(self, container_id: str) -> Exit:
        return self._on(container_id).wait(container_id)

    def exec(self, container_id: str, command: Sequence[str]) -> tuple[int, str]:
        return self._on(container_id).exec(container_id, command)

    def processes(self, container_id: str) -> int | None:
        return self._on(container_id).processes(container_id)

    # networks: the stack's own are local; a host's are made as its nodes start, and go with its detach
    def join_network(self, container_id: str, network: str, alias: str) -> None:
        self._on(container_id).join_network(container_id, network, alias)

    def leave_network(self, container_id: str, network: str) -> None:
        self._on(container_id).leave_network(container_id, network)

    # volumes: a detached node's data folder is on its own engine (named after the node: unique on every engine)
    def volumes(self, wanted: dict[str, str]) -> "list[str]":
        def theirs(_key: str, engine: Runtime) -> "list[str]":
            found = engine.volumes(wanted)
            self.where.update((v, engine) for v in found)
            return found
        return self.local.volumes(wanted) + self._remote(theirs)

    def remove_volume(self, name: str) -> None:
        self._on(name).remove_volume(name)
        self.where.pop(name, None)
