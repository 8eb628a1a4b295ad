"""DockerRuntime: with its networks (docker_networks.py), the only module that talks to the Docker engine."""

import os
import re
from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime
from pathlib import Path

import docker
from docker.errors import APIError, DockerException, NotFound

from emulator.errors import RuntimeUnavailable
from emulator.runtime import labels
from emulator.runtime.base import MANAGED, ContainerSpec, Exit, Observed
from emulator.runtime.docker_networks import DockerNetworks
from emulator.runtime.docker_networks import translate as _translate


def _first_ip(attrs: dict) -> str | None:
    """The container's address on its first network with one (inspect and listing share the shape)."""
    networks = (attrs.get("NetworkSettings") or {}).get("Networks") or {}
    return next((n.get("IPAddress") for n in networks.values() if n.get("IPAddress")), None)


def _moment(stamp: str | None) -> datetime | None:
    """The engine's RFC 3339 time in nanoseconds ("2026-11-25T06:45:01.123456789Z") to microseconds; None for
    its zero time (never started)."""
    found = re.match(r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(\.\d+)?(Z|[+-]\d\d:\d\d)$", stamp or "")
    if not found or found.group(1).startswith("0001"):
        return None
    fraction = (found.group(2) or ".0")[:7]
    return datetime.fromisoformat(found.group(1) + fraction + found.group(3).replace("Z", "+00:00"))


def _summarised(summary: dict) -> Observed:
    """An Observed from an entry of the engine's container listing ("Status": "Exited (137) 2 seconds ago")."""
    exited = re.match(r"Exited \((-?\d+)\)", summary.get("Status") or "")
    ports = {p["PrivatePort"]: p["PublicPort"] for p in summary.get("Ports") or [] if p.get("PublicPort")}
    names = [n.lstrip("/") for n in summary.get("Names") or []]
    name = next((n for n in names if "/" not in n), names[0] if names else "")  # not a legacy link's alias
    return Observed(id=summary["Id"], name=name,
                    labels=summary.get("Labels") or {}, running=summary.get("State") == "running",
                    exit_code=int(exited.group(1)) if exited else None, oom_killed=False, ip=_first_ip(summary),
                    ports=ports)


def _shallow(host: str, path: str) -> docker.types.Mount:
    """A read-only bind mount without the mounts below its source (API 1.40's NonRecursive, which docker-py does
    not spell out)."""
    mount = docker.types.Mount(path, host, type="bind", read_only=True)
    mount["BindOptions"] = {"NonRecursive": True}
    return mount


def own_container_id(mountinfo: str) -> str | None:
    """This process's container, from the engine's per-container files mounted into it (/etc/hostname and
    /etc/resolv.conf come from /var/lib/docker/containers/<id>/); None outside a container."""
    found = re.search(r"/containers/([0-9a-f]{64})/(?:hostname|hosts|resolv\.conf)\s", mountinfo)
    return found.group(1) if found else None


class DockerRuntime(DockerNetworks):
    def __init__(self, client: "docker.DockerClient | None" = None, streams: "docker.APIClient | None" = None):
        try:
            self.client = client or docker.from_env(timeout=120)
            # Waiting for an exit may take hours: no read timeout there (a remote host's engine: its own client).
            self.streams = streams or docker.from_env(timeout=None).api
            self.host_cpus = float(self.client.info().get("NCPU") or os.cpu_count() or 1)
        except DockerException as exc:
            raise RuntimeUnavailable(f"Cannot reach the Docker engine: {exc}. Is Docker running?") from exc

    def _observe(self, container) -> Observed:
        state = container.attrs.get("State", {})
        ip = _first_ip(container.attrs)
        published = container.attrs.get("NetworkSettings", {}).get("Ports") or {}
        ports = {int(port.split("/")[0]): int(bound[0]["HostPort"]) for port, bound in published.items() if bound}
        return Observed(id=container.id, name=container.name, labels=container.labels,
                        running=state.get("Running", False), exit_code=state.get("ExitCode"),
                        oom_killed=state.get("OOMKilled", False), ip=ip, ports=ports,
                        started_at=_moment(state.get("StartedAt")),
                        layer=((container.attrs.get("GraphDriver") or {}).get("Data") or {}).get("UpperDir"))

    def _options(self, spec: ContainerSpec) -> dict:
        """The engine's run options for the limits, network, ports and hardening `spec` asks for."""
        kwargs: dict = {}
        if spec.cpus:
            # The engine refuses more CPUs than the host has; a "VM" bigger than the host gets all of it.
            kwargs["nano_cpus"] = int(min(spec.cpus, self.host_cpus) * 1e9)
        if spec.memory_bytes:
            kwargs["mem_limit"] = spec.memory_bytes
        if spec.network_of:
            kwargs["network_mode"] = f"container:{spec.network_of}"
        else:
            kwargs["network"] = spec.network
        if spec.ports:  # loopback only: nothing of the emulator listens on the host's other addresses
            kwargs["ports"] = {f"{port}/tcp": ("127.0.0.1", host) for port, host in spec.ports.items()}
        if spec.drop_capabilities:
            kwargs["cap_drop"] = ["ALL"]
        if spec.pids_limit:
            kwargs["pids_limit"] = spec.pids_limit
        if spec.shallow_mounts:
            kwargs["mounts"] = [_shallow(host, path) for host, path in spec.shallow_mounts.items()]
        if spec.gpus:
            kwargs["device_requests"] = [docker.types.DeviceRequest(count=spec.gpus, capabilities=[["gpu"]])]
        return kwargs

    def run(self, spec: ContainerSpec) -> Observed:
        kwargs = self._options(spec)
        try:
            self.client.images.get(spec.image)  # local images only: never let containers.run() try a pull
            volumes = {host: {"bind": path, "mode": "ro" if path in spec.read_only else "rw"}
                       for host, path in spec.mounts.items()}
            for volume, path in spec.volumes.items():
                self._ensure_volume(volume, {k: v for k, v in spec.labels.items() if k in labels.VOLUME_LABELS})
                volumes[volume] = {"bind": path, "mode": "rw"}
            container = self.client.containers.run(
                spec.image, spec.command, name=spec.name, detach=True, init=True,
                labels={MANAGED: "true", **spec.labels}, environment=spec.env, volumes=volumes,
                user=spec.user, entrypoint=spec.entrypoint, working_dir=spec.working_dir,
                security_opt=["no-new-privileges"], **kwargs)
            for network in spec.networks:
                self.client.networks.get(network).connect(container)
            container.reload()
            return self._observe(container)
        except APIError as exc:
            if any(spec.ports.values()) and "already allocated" in str(exc):  # a wanted host port is taken
                self.remove(spec.name)  # created, not started
                return self.run(replace(spec, ports=dict.fromkeys(spec.ports)))
            raise _translate(exc) from exc
        except DockerException as exc:
            raise _translate(exc) from exc

    def list(self, labels: dict[str, str | None], managed: bool = True) -> list[Observed]:
        """Those with every label (of any value where it is None). One engine call, whatever the count: the controller lists every pass, and an inspect per container
        (what docker-py's containers.list does) cost the engine more than the jobs' own starts. The listing
        cannot tell an OOM kill; `wait` can."""
        wanted = [k if v is None else f"{k}={v}" for k, v in labels.items()]
        filters = {"label": [MANAGED + "=true"] * managed + wanted}
        try:
            return [_summarised(summary) for summary in self.client.api.containers(all=True, filters=filters)]
        except (APIError, DockerException) as exc:
            raise _translate(exc) from exc

    def find(self, name: str) -> Observed | None:
        """The container of that name (or id), if there is one."""
        try:
            return self._observe(self.client.containers.get(name))
        except NotFound:
            return None
        except (APIError, DockerException) as exc:
            raise _translate(exc) from exc

    def signal(self, container_id: str, signal: str) -> None:
        try:
            self.client.api.kill(container_id, signal=signal)
        except NotFound:
            pass
        except APIError as exc:
            if exc.status_code != 409:  # 409: not running any more
                raise _translate(exc) from exc

    def remove(self, container_id: str) -> None:
        try:
            self.client.api.remove_container(container_id, force=True)
        except NotFound:
            pass
        except APIError as exc:
            if exc.status_code != 409:  # 409: removal already in progress
                raise _translate(exc) from exc

    def logs(self, container_id: str, tail: int = 100) -> str:
        try:
            return self.client.api.logs(container_id, tail=tail).decode(errors="replace")
        except NotFound:
            return ""
        except APIError as exc:
            raise _translate(exc) from exc

    def wait(self, container_id: str) -> Exit:
        try:
            code = self.streams.wait(container_id)["StatusCode"]
            if code != 137:  # only a SIGKILL can be the kernel's OOM killer: spare the engine a call otherwise
                return Exit(code=code, oom_killed=False)
            state = self.client.api.inspect_container(container_id)["State"]
            return Exit(code=code, oom_killed=state.get("OOMKilled", False))
        except APIError as exc:
            raise _translate(exc) from exc

    def exec(self, container_id: str, command: Sequence[str]) -> tuple[int, str]:
        """Run `command` in the running container as its own user: (exit code, stdout and stderr)."""
        try:
            result = self.client.containers.get(container_id).exec_run(command)
            return result.exit_code, result.output.decode(errors="replace")
        except (APIError, DockerException) as exc:
            raise _translate(exc) from exc

    def processes(self, container_id: str) -> int | None:
        """From the engine's stats, one sample without the second one CPU figures need (API 1.41, a few ms)."""
        try:
            stats = self.client.api.stats(container_id, stream=False, one_shot=True)
        except NotFound:
            return None
        except ValueError:  # an empty answer instead of JSON: the container was being removed (seen in CI)
            return None
        except (APIError, DockerException) as exc:
            raise _translate(exc) from exc
        current = (stats.get("pids_stats") or {}).get("current")  # absent once it stopped
        return int(current) if current is not None else None

    def _ensure_volume(self, name: str, labels: dict[str, str]) -> None:
        """Named volumes are made here, labelled, so that a stack's can be found again (the engine would make
        them unlabelled on first use)."""
        try:
            self.client.volumes.get(name)
        except NotFound:
            self.client.volumes.create(name, labels={MANAGED: "true", **labels})

    def volumes(self, labels: dict[str, str]) -> "list[str]":
        filters = {"label": [MANAGED + "=true"] + [f"{k}={v}" for k, v in labels.items()]}
        try:
            return [v.name for v in self.client.volumes.list(filters=filters)]
        except (APIError, DockerException) as exc:
            raise _translate(exc) from exc

    def remove_volume(self, name: str) -> None:
        try:
            self.client.api.remove_volume(name, force=True)
        except NotFound:
            pass
        except APIError as exc:
            raise _translate(exc) from exc

    def volume_path(self, name: str) -> Path:
        """Where the named volume lives on the engine's host: containers this process starts bind-mount it there."""
        try:
            return Path(self.client.volumes.get(name).attrs["Mountpoint"])
        except APIError as exc:
            raise _translate(exc) from exc

    def host_path(self, path: Path) -> Path | None:
        """Where `path`, bind-mounted into this process's own container, lives on the Docker host (containers
        the emulator starts mount host paths, as siblings); None outside a container or for another mount."""
        try:
            own = own_container_id(Path("/proc/self/mountinfo").read_text())
            mounts = self.client.api.inspect_container(own)["Mounts"] if own else []
        except (OSError, APIError, DockerException):
            return None
        return next((Path(m["Source"]) for m in mounts
                     if m.get("Type") == "bind" and Path(m["Destination"]) == path), None)

    def data_root(self) -> Path | None:
        """The engine's data root on its host (`docker info`: Docker Root Dir), where its storage driver keeps
        containers' writable layers."""
        try:
            root = self.client.info().get("DockerRootDir")
        except (APIError, DockerException):
            return None
        return Path(root) if root else None

    def has_gpus(self) -> bool:
        """NVIDIA GPUs reach containers through the nvidia runtime; without it there are none to give."""
        try:
            return "nvidia" in (self.client.info().get("Runtimes") or {})
        except (APIError, DockerException) as exc:
            raise _translate(exc) from exc
