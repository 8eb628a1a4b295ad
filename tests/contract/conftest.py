"""The runtime contract's fixtures: every test runs on FakeRuntime and on DockerRuntime (marked `docker`).

Each test has a stack label of its own on all it makes (containers, networks, volumes); on Docker a finalizer
removes whatever carries it, so no test leaves an orphan behind.
"""

import uuid
from collections.abc import Callable, Iterator

import docker
import pytest

from emulator.runtime.base import ContainerSpec, Observed, Runtime
from emulator.runtime.docker import DockerRuntime
from emulator.runtime.fake import FakeRuntime
from emulator.runtime.labels import ROLE, STACK
from tests.cleanup import remove_containers

PROBE_IMAGE = "amlemu/redis:latest"  # a plain entrypoint, with sh and sleep
SLEEP = ["sleep", "300"]


@pytest.fixture(scope="session")
def docker_client() -> Iterator[docker.DockerClient]:
    try:
        client = docker.from_env(timeout=120)
        client.images.get(PROBE_IMAGE)
    except docker.errors.ImageNotFound:
        pytest.skip(f"local image {PROBE_IMAGE} is missing; build it with `make build`")
    except Exception as exc:  # noqa: BLE001
        pytest.skip(f"Docker engine not reachable: {exc}")
    yield client
    client.close()


@pytest.fixture(scope="session")
def docker_runtime(docker_client) -> DockerRuntime:
    return DockerRuntime(docker_client)


@pytest.fixture
def stack() -> str:
    return f"ct-{uuid.uuid4().hex[:10]}"


@pytest.fixture(params=["fake", pytest.param("docker", marks=pytest.mark.docker)])
def runtime(request, stack) -> Iterator[Runtime]:
    if request.param == "fake":
        yield FakeRuntime(images={PROBE_IMAGE})
        return
    yield request.getfixturevalue("docker_runtime")
    _sweep(request.getfixturevalue("docker_client"), stack)


def _sweep(client: docker.DockerClient, stack: str) -> None:
    """Containers first: a network or volume still in use cannot go."""
    filters = {"label": [f"{STACK}={stack}"]}
    remove_containers(client, filters)
    for network in client.networks.list(filters=filters):
        network.remove()
    for volume in client.volumes.list(filters=filters):
        volume.remove(force=True)


@pytest.fixture
def make_spec(stack) -> Callable[..., ContainerSpec]:
    """A probe's spec in this test's stack, with a name of its own unless given."""
    def make(command: list[str] = SLEEP, labels: dict[str, str] | None = None, **fields) -> ContainerSpec:
        fields.setdefault("name", f"amlemu-{stack}-{uuid.uuid4().hex[:8]}")
        fields.setdefault("image", PROBE_IMAGE)
        return ContainerSpec(command=command,
                             labels={STACK: stack, ROLE: "probe", **(labels or {})}, **fields)
    return make


@pytest.fixture
def probe(runtime, make_spec) -> Callable[..., Observed]:
    """Run a probe: probe(command, labels, **spec fields) -> Observed."""
    return lambda *args, **fields: runtime.run(make_spec(*args, **fields))


@pytest.fixture
def network(runtime, stack) -> Callable[[str], str]:
    """Make a network of this test's stack (its name unique to the test) and return its name."""
    def make(suffix: str = "net") -> str:
        name = f"amlemu-{stack}-{suffix}"
        runtime.ensure_network(name, {STACK: stack})
        return name
    return make
