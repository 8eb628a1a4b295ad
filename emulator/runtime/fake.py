"""FakeRuntime: the runtime ports in memory, for tests; tests/contract holds it to DockerRuntime's behaviour.

It runs no process. A command `sh -c "exit N"` (also as entrypoint ["/bin/sh", "-c"] + command ["exit N"]) ends
at once with N; any other runs until signalled (unless it traps the signal), removed or ended by the test with
`exit()`. Test controls: `exit`, `trap`, `fail_next_run`, `write_logs`, `script_exec`, `images`, `calls` (what was
asked: run, signal, remove).
"""

import re
import secrets
import signal as signals
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime

from emulator.errors import EmulatorError, RuntimeUnavailable, ValidationFailed
from emulator.runtime.base import MANAGED, ContainerSpec, Exit, Observed
from emulator.runtime.labels import VOLUME_LABELS

EPHEMERAL_PORTS = range(32768, 61000)  # where the engine picks a host port nobody asked for
DEFAULT_NETWORK = "bridge"  # the engine's own, for a container that names none


def _exit_code(argv: Sequence[str]) -> int | None:
    """N for `sh -c "exit N"`, None for any other command."""
    if len(argv) == 3 and argv[0] in ("sh", "/bin/sh") and argv[1] == "-c":
        found = re.fullmatch(r"\s*exit\s+(\d+)\s*", argv[2])
        return int(found.group(1)) % 256 if found else None
    return None


def _signal_name(signal: str) -> str:
    return signal if signal.startswith("SIG") else f"SIG{signal}"


def _matches(labels: dict[str, str], wanted: dict[str, str]) -> bool:
    return all(labels.get(k) == v for k, v in wanted.items())


@dataclass
class _Container:
    id: str
    spec: ContainerSpec
    labels: dict[str, str]
    ips: dict[str, str]  # network -> address, while running
    ports: dict[int, int]  # container port -> host port, while running
    started_at: datetime
    end: Exit | None = None
    logs: list[str] = field(default_factory=list)  # lines, with their ends
    traps: set[str] = field(default_factory=set)  # signals (SIGTERM...) its process handles and runs on
    aliases: dict[str, str] = field(default_factory=dict)  # network -> the other name it has there
    processes: int = 1  # processes and threads it holds while running

    def observed(self, listed: bool = False) -> Observed:
        """As `find` sees it; `listed`: as the engine's listing does (no start time, no exit code while running,
        no OOM flag)."""
        running = self.end is None
        ip = next((self.ips[n] for n in sorted(self.ips)), None) if running else None
        code = self.end.code if self.end else (None if listed else 0)
        return Observed(id=self.id, name=self.spec.name, labels=dict(self.labels), running=running,
                        exit_code=code, oom_killed=bool(self.end and self.end.oom_killed and not listed),
                        ip=ip, ports=dict(self.ports) if running else {},
                        started_at=None if listed else self.started_at)


class FakeRuntime:
    """The whole Runtime, thread-safe. `images`: the images there are (None: any). `wait` blocks until the
    container ends, at most `wait_timeout` seconds, then raises TimeoutError: a test never hangs on it."""

    def __init__(self, clock: Callable[[], datetime] = lambda: datetime.now(UTC), *, gpus: bool = False,
                 images: Iterable[str] | None = None, wait_timeout: float = 10.0):
        self.clock, self.gpus, self.wait_timeout = clock, gpus, wait_timeout
        self.images = None if images is None else set(images)
        self.network_labels: dict[str, dict[str, str]] = {}  # name -> labels
        self.sealed: set[str] = set()  # networks made sealed (the host has no address there)
        self.volume_labels: dict[str, dict[str, str]] = {}  # name -> labels
        self.calls: list[tuple] = []  # ("run", spec), ("signal", id, signal), ("remove", id)
        self._containers: dict[str, _Container] = {}  # by id, oldest first
        self._failures: list[tuple[dict[str, str], EmulatorError]] = []
        self._execs: dict[tuple[str | None, tuple[str, ...]], tuple[int, str]] = {}
        self._hosts: dict[str, int] = {}  # network -> addresses handed out
        self._changed = threading.Condition()

    # --- test controls ---------------------------------------------------------------------------------------

    def exit(self, container: str, code: int, oom_killed: bool = False) -> None:
        """The container's process ends with `code` (a no-op if it had already ended)."""
        with self._changed:
            self._end(self._get(container, strict=True), Exit(code=code, oom_killed=oom_killed))

    def trap(self, container: str, *signals: str) -> None:
        """The container's process handles these signals and runs on (a worker finishing its task on SIGTERM),
        until `exit()`, an untrapped signal (SIGKILL cannot be trapped) or its removal ends it."""
        with self._changed:
            names = {_signal_name(s) for s in signals} - {"SIGKILL"}
            self._get(container, strict=True).traps.update(names)

    def fail_next_run(self, error: EmulatorError, labels: dict[str, str] | None = None) -> None:
        """The next `run` whose spec carries `labels` (any run, without) raises `error` and starts nothing."""
        with self._changed:
            self._failures.append((dict(labels or {}), error))

    def write_logs(self, container: str, text: str) -> None:
        with self._changed:
            self._get(container, strict=True).logs.extend(text.splitlines(keepends=True))

    def set_processes(self, container: str, count: int) -> None:
        """The container holds `count` processes and threads now (a fork bomb at its limit, say)."""
        with self._changed:
            self._get(container, strict=True).processes = count

    def script_exec(self, command: Sequence[str], code: int, output: str = "", container: str | None = None) -> None:
        """What `exec(command)` answers, in that container (an id) or in any."""
        with self._changed:
            self._execs[(container, tuple(command))] = (code, output)

    # --- containers -----------------------------------------------------------------------------------------

    def run(self, spec: ContainerSpec) -> Observed:
        with self._changed:
            self.calls.append(("run", spec))
            self._refuse(spec)
            for volume in spec.volumes:  # made on first use, labelled with its owner's, as DockerRuntime does
                owner = {k: v for k, v in spec.labels.items() if k in VOLUME_LABELS}
                self.volume_labels.setdefault(volume, {MANAGED: "true", **owner})
            networks = [] if spec.network_of else [spec.network or DEFAULT_NETWORK, *spec.networks]
            container = _Container(id=secrets.token_hex(32), spec=spec, labels={MANAGED: "true", **spec.labels},
                                   ips={n: self._address(n) for n in networks}, ports=self._publish(spec.ports),
                                   started_at=self.clock())
            self._containers[container.id] = container
            code = _exit_code([*(spec.entrypoint or []), *spec.command])
            if code is not None:
                self._end(container, Exit(code=code, oom_killed=False))
            return container.observed()

    def _refuse(self, spec: ContainerSpec) -> None:
        """Raise what the engine would for a run that cannot start (or what the test asked for)."""
        failure = next((f for f in self._failures if _matches(spec.labels, f[0])), None)
        if failure:
            self._failures.remove(failure)
            raise failure[1]
        if self.images is not None and spec.image not in self.images:
            raise ValidationFailed(f"Image not found: {spec.image}. Build it with `make up`.", target="image")
        if any(c.spec.name == spec.name for c in self._containers.values()):
            raise RuntimeUnavailable(f'Docker engine error: The container name "/{spec.name}" is already in use')
        known = {DEFAULT_NETWORK, *self.network_labels}  # the engine's own bridge is always there
        missing = [n for n in (spec.network, *spec.networks) if n and n not in known]
        if missing:
            raise RuntimeUnavailable(f"Docker engine error: network {missing[0]} not found")
        if spec.network_of and getattr(self._get(spec.network_of), "end", True) is not None:
            raise RuntimeUnavailable(f"Docker engine error: cannot join network of a non running container: "
                                     f"{spec.network_of}")
        if spec.gpus and not self.gpus:
            raise RuntimeUnavailable('Docker engine error: could not select device driver "" with capabilities: '
                                     '[[gpu]]')

    def _address(self, network: str) -> str:
        """A fresh address on the network's own /16 (the gateway has .1)."""
        self._hosts[network] = host = self._hosts.get(network, 1) + 1
        return f"172.{17 + list(self._hosts).index(network)}.{host // 256}.{host % 256}"

    def _publish(self, wanted: dict[int, int | None]) -> dict[int, int]:
        """The wanted host port when no running container holds it, else one the engine picks."""
        held = {port for c in self._containers.values() if c.end is None for port in c.ports.values()}
        published = {}
        for port, host in wanted.items():
            if host is None or host in held:
                host = next(p for p in EPHEMERAL_PORTS if p not in held)
            published[port] = host
            held.add(host)
        return published

    def _get(self, ref: str, strict: bool = False) -> _Container | None:
        """By id or name, as the engine accepts either; `strict`: a test control naming nothing is a test bug."""
        found = self._containers.get(ref) or next((c for c in self._containers.values() if c.spec.name == ref), None)
        if found is None and strict:
            raise KeyError(f"no container {ref!r}")
        return found

    def _end(self, container: _Container, end: Exit) -> None:
        if container.end is None:
            container.end, container.ips = end, {}
            self._changed.notify_all()

    def list(self, labels: dict[str, str], managed: bool = True) -> list[Observed]:
        """Newest first, as the engine lists."""
        with self._changed:
            wanted = {MANAGED: "true", **labels} if managed else labels
            return [c.observed(listed=True) for c in reversed(self._containers.values()) if _matches(c.labels, wanted)]

    def find(self, name: str) -> Observed | None:
        with self._changed:
            found = self._get(name)
            return found.observed() if found else None

    def signal(self, container_id: str, signal: str) -> None:
        """Ends a running container with 128 + the signal's number (what init reports when the signal killed
        the command); a stopped or unknown container is left alone."""
        with self._changed:
            self.calls.append(("signal", container_id, signal))
            found = self._get(container_id)
            if found is None or found.end is not None:
                return
            try:
                number = signals.Signals[_signal_name(signal)].value
            except KeyError:
                raise RuntimeUnavailable(f"Docker engine error: Invalid signal: {signal}") from None
            if _signal_name(signal) not in found.traps:
                self._end(found, Exit(code=128 + number, oom_killed=False))

    def remove(self, container_id: str) -> None:
        """Forced, as DockerRuntime's: a running container is killed first (a waiter hears 137); an unknown one
        is no error."""
        with self._changed:
            self.calls.append(("remove", container_id))
            found = self._get(container_id)
            if found:
                self._end(found, Exit(code=137, oom_killed=False))
                del self._containers[found.id]

    def logs(self, container_id: str, tail: int = 100) -> str:
        with self._changed:
            lines = getattr(self._get(container_id), "logs", [])
            return "".join(lines[max(0, len(lines) - tail):])

    def wait(self, container_id: str) -> Exit:
        with self._changed:
            found = self._get(container_id)
            if found is None:
                raise RuntimeUnavailable(f"Docker engine error: No such container: {container_id}")
            if not self._changed.wait_for(lambda: found.end is not None, timeout=self.wait_timeout):
                raise TimeoutError(f"{found.spec.name} still running after {self.wait_timeout} s: end it with "
                                   f"signal() or exit() first")
            return found.end

    def exec(self, container_id: str, command: Sequence[str]) -> tuple[int, str]:
        """The scripted answer, else `sh -c "exit N"` gives (N, ""), else the engine's "not found" (126)."""
        with self._changed:
            found = self._get(container_id)
            if found is None or found.end is not None:
                raise RuntimeUnavailable(f"Docker engine error: Container {container_id} is not running"
                                         if found else f"Docker engine error: No such container: {container_id}")
            scripted = self._execs.get((found.id, tuple(command))) or self._execs.get((None, tuple(command)))
            if scripted:
                return scripted
            code = _exit_code(command)
            if code is not None:
                return code, ""
            return 126, f'exec: "{command[0]}": executable file not found in $PATH\n'

    def processes(self, container_id: str) -> int | None:
        with self._changed:
            found = self._get(container_id)
            return found.processes if found is not None and found.end is None else None

    def has_gpus(self) -> bool:
        return self.gpus

    # --- networks and volumes -------------------------------------------------------------------------------

    def ensure_network(self, name: str, labels: dict[str, str], sealed: bool = False) -> None:
        with self._changed:
            if name not in self.network_labels and sealed:
                self.sealed.add(name)
            self.network_labels.setdefault(name, {MANAGED: "true", **labels})

    def remove_network(self, name: str) -> None:
        """Refused while a running container is on it, as by the engine; an unknown one is no error."""
        with self._changed:
            if any(name in c.ips for c in self._containers.values()):
                raise RuntimeUnavailable(f"Docker engine error: error while removing network: network {name} has "
                                         f"active endpoints")
            self.network_labels.pop(name, None)
            self.sealed.discard(name)

    def join_network(self, container_id: str, network: str, alias: str) -> None:
        with self._changed:
            container = self._get(container_id)
            if container is None or container.end is not None:
                raise RuntimeUnavailable(f"Docker engine error: container {container_id} is not running")
            if network not in {DEFAULT_NETWORK, *self.network_labels}:
                raise RuntimeUnavailable(f"Docker engine error: network {network} not found")
            if network not in container.ips:
                container.ips[network] = self._address(network)
                container.aliases[network] = alias

    def leave_network(self, container_id: str, network: str) -> None:
        with self._changed:
            container = self._get(container_id)
            if container is not None:
                container.ips.pop(network, None)
                container.aliases.pop(network, None)

    def networks(self, labels: dict[str, str]) -> dict[str, dict[str, str]]:
        with self._changed:
            wanted = {MANAGED: "true", **labels}
            return {name: dict(have) for name, have in self.network_labels.items() if _matches(have, wanted)}

    def volumes(self, labels: dict[str, str]) -> "list[str]":
        with self._changed:
            wanted = {MANAGED: "true", **labels}
            return [name for name, have in self.volume_labels.items() if _matches(have, wanted)]

    def remove_volume(self, name: str) -> None:
        """Refused while any container, running or not, mounts it; an unknown one is no error."""
        with self._changed:
            if any(name in c.spec.volumes for c in self._containers.values()):
                raise RuntimeUnavailable(f"Docker engine error: remove {name}: volume is in use")
            self.volume_labels.pop(name, None)
