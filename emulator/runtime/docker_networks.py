"""The Docker engine's networks, for DockerRuntime (docker.py): user-defined bridges a stack's containers find each
other on, sealed ones for jobs, joined and left by name."""

import docker
from docker.errors import APIError, DockerException, ImageNotFound, NotFound

from emulator.errors import RuntimeUnavailable, ValidationFailed
from emulator.runtime.base import MANAGED


def translate(exc: Exception) -> Exception:
    """The engine's error as the emulator's: a missing image is bad input, anything else the engine's trouble."""
    if isinstance(exc, ImageNotFound):
        return ValidationFailed(f"Image not found: {exc.explanation or exc}. Build it with `make up`.",
                                target="image")
    return RuntimeUnavailable(f"Docker engine error: {getattr(exc, 'explanation', None) or exc}")



class DockerNetworks:
    client: "docker.DockerClient"

    def _networks_named(self, name: str) -> list:
        """The engine's name filter matches any part of a name ("amlemu" finds "amlemu-jobs"): keep exact ones."""
        return [network for network in self.client.networks.list(names=[name]) if network.name == name]

    def ensure_network(self, name: str, labels: dict[str, str], sealed: bool = False) -> None:
        """A user-defined bridge, so containers on it find each other by name. Sealed: `internal`, and without
        an address on the host's side of the bridge (inhibit_ipv4): an internal bridge alone still routes its
        containers to the host's ports (INPUT is not the engine's to filter), to every address the host has."""
        options = {"com.docker.network.bridge.inhibit_ipv4": "true"} if sealed else None
        try:
            if not self._networks_named(name):
                self.client.networks.create(name, driver="bridge", internal=sealed, options=options,
                                            labels={MANAGED: "true", **labels})
        except (APIError, DockerException) as exc:
            raise translate(exc) from exc

    def remove_network(self, name: str) -> None:
        try:
            for network in self._networks_named(name):
                network.remove()
        except NotFound:
            pass
        except (APIError, DockerException) as exc:
            raise translate(exc) from exc

    def join_network(self, container_id: str, network: str, alias: str) -> None:
        try:
            attached = self.client.api.inspect_container(container_id)["NetworkSettings"]["Networks"] or {}
            if network not in attached:
                self.client.api.connect_container_to_network(container_id, network, aliases=[alias])
        except NotFound as exc:
            raise RuntimeUnavailable(f"Docker engine error: {exc.explanation or exc}") from exc
        except (APIError, DockerException) as exc:
            raise translate(exc) from exc

    def leave_network(self, container_id: str, network: str) -> None:
        try:
            self.client.api.disconnect_container_from_network(container_id, network, force=True)
        except NotFound:
            pass
        except APIError as exc:
            if "is not connected" not in str(exc):
                raise translate(exc) from exc
        except DockerException as exc:
            raise translate(exc) from exc

    def networks(self, labels: dict[str, str]) -> dict[str, dict[str, str]]:
        filters = {"label": [MANAGED + "=true"] + [f"{k}={v}" for k, v in labels.items()]}
        try:
            return {n["Name"]: n.get("Labels") or {} for n in self.client.api.networks(filters=filters)}
        except (APIError, DockerException) as exc:
            raise translate(exc) from exc
