"""Fixtures for the Docker-backed integration tests.

One Redis (a testcontainer from the local `amlemu/redis:latest` image) serves the whole session on a
dedicated bridge network, so node containers reach it by name while the controller, which runs here
on the host, reaches it through the published port. Every test gets its own stack label and a
finalizer that removes whatever containers carry it, so no test leaves an orphan behind.
"""

import os
import sys
from pathlib import Path

# `tests.waiting` must import under a bare `pytest` too (the Makefile's), not only `python -m pytest`,
# which puts the working directory on sys.path. (`pythonpath = ["."]` in pyproject would do it for all.)
ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

# Ryuk (the testcontainers reaper) cannot be pulled here; the fixtures clean up after themselves.
os.environ["TESTCONTAINERS_RYUK_DISABLED"] = "true"

import re  # noqa: E402
import uuid  # noqa: E402
from collections.abc import Callable, Iterator  # noqa: E402
from datetime import UTC, datetime  # noqa: E402

import docker  # noqa: E402
import pytest  # noqa: E402
import redis  # noqa: E402
from docker.errors import NotFound  # noqa: E402

try:  # testcontainers >= 4.x keeps the Redis module under `community`; older 4.x releases at the top
    from testcontainers.community.redis import RedisContainer  # noqa: E402
except ImportError:  # pragma: no cover - depends on the installed version
    from testcontainers.redis import RedisContainer  # noqa: E402

from emulator.controller.reconcilers.clusters import ClusterReconciler  # noqa: E402
from emulator.runtime.base import MANAGED  # noqa: E402
from emulator.runtime.docker import DockerRuntime  # noqa: E402
from emulator.settings import Settings  # noqa: E402
from emulator.store.db import Store  # noqa: E402
from tests.cleanup import remove_containers  # noqa: E402
from tests.integration.lab import Lab  # noqa: E402

REDIS_IMAGE = "amlemu/redis:latest"
NODE_IMAGE = os.environ.get("AMLEMU_IMAGE", "amlemu/emulator:latest")  # as `amlemu build` tags it
HERE = Path(__file__).parent


def pytest_collection_modifyitems(config, items):
    # A conftest hook sees every collected item of the session: mark only the ones under this folder.
    for item in items:
        if HERE in Path(str(item.path)).parents:
            item.add_marker(pytest.mark.docker)


@pytest.fixture(scope="session")
def docker_client() -> Iterator[docker.DockerClient]:
    try:
        client = docker.from_env(timeout=120)
        client.ping()
    except Exception as exc:  # noqa: BLE001
        pytest.skip(f"Docker engine not reachable: {exc}")
    for image in (REDIS_IMAGE, NODE_IMAGE):
        try:
            client.images.get(image)
        except docker.errors.ImageNotFound:
            pytest.skip(f"local image {image} is missing; build it with `make build`")
    yield client
    client.close()


@pytest.fixture(scope="session")
def docker_network(docker_client) -> Iterator[str]:
    """A bridge network for this session only; node containers and Redis meet on it."""
    _sweep_stale_networks(docker_client)
    name = f"amlemu-it-{uuid.uuid4().hex[:8]}"
    network = docker_client.networks.create(name, driver="bridge", labels={"amlemu.it": "true"})
    yield name
    # The controller made the jobs and scoring networks beside it: they go too, or the engine's address
    # pools run out after a few dozen sessions.
    for made in docker_client.networks.list(names=[f"{name}-jobs", f"{name}-scoring"]) + [network]:
        _remove_network(made)


def _remove_network(network) -> None:
    """Whatever is still attached (a crashed test's nodes, Redis) goes before the network."""
    try:
        network.reload()
        for container in network.containers:
            try:
                container.remove(force=True)
            except NotFound:
                pass
        network.remove()
    except NotFound:
        pass


def _sweep_stale_networks(docker_client: docker.DockerClient) -> None:
    """Networks an interrupted session left: a (workspace's) jobs or scoring network whose session network is
    gone ("amlemu-it-<session>-jobs-<workspace tag>")."""
    names = {n.name for n in docker_client.networks.list(filters={"name": "amlemu-it-"})}
    for name in names:
        base = re.sub(r"-(jobs|scoring)(-[0-9a-f]+)?$", "", name)
        if base != name and base not in names:
            _remove_network(docker_client.networks.get(name))


@pytest.fixture(scope="session")
def redis_container(docker_network) -> Iterator[RedisContainer]:
    alias = f"{docker_network}-redis"
    # The container name is resolvable on a user-defined network: nodes use it as the Redis host.
    container = (RedisContainer(REDIS_IMAGE)
                 .with_name(alias)
                 .with_kwargs(network=docker_network, labels={"amlemu.it": "true"}))
    container.start()
    container.alias = alias
    yield container
    container.stop()


@pytest.fixture(scope="session")
def redis_in_network_url(redis_container) -> str:
    """What node containers use: the container name on the shared network."""
    return f"redis://{redis_container.alias}:6379/0"


@pytest.fixture(scope="session")
def redis_host_url(redis_container) -> str:
    """What the controller (running here, on the host) uses: the published port."""
    host = redis_container.get_container_host_ip()
    port = redis_container.get_exposed_port(6379)
    return f"redis://{host}:{port}/0"


@pytest.fixture(scope="session")
def broker(redis_host_url) -> Iterator[redis.Redis]:
    client = redis.Redis.from_url(redis_host_url)
    client.ping()
    yield client
    client.close()


@pytest.fixture
def stack(docker_client) -> Iterator[str]:
    """A stack label unique to the test; every container labelled with it is removed afterwards."""
    name = f"it-{uuid.uuid4().hex[:10]}"
    yield name
    remove_containers(docker_client, {"label": [f"amlemu.stack={name}"]})


@pytest.fixture
def time_scale() -> float:
    """Override in a module or with indirect parametrisation to speed platform timers up."""
    return 0.05


@pytest.fixture
def settings(stack, docker_network, redis_in_network_url, tmp_path, time_scale) -> Settings:
    return Settings(stack=stack, docker_network=docker_network, redis_url=redis_in_network_url,
                    data_dir=tmp_path, database_url="", reconcile_interval_seconds=0.2,
                    time_scale=time_scale, resource_scale=0.25, provisioning_delay_seconds=0.0,
                    node_image=NODE_IMAGE)


@pytest.fixture
def store(settings) -> Iterator[Store]:
    store = Store(f"sqlite:///{settings.data_dir / 'amlemu.db'}")
    yield store
    store.close()


@pytest.fixture
def runtime(docker_client) -> DockerRuntime:
    return DockerRuntime(docker_client)


@pytest.fixture
def clock() -> Callable[[], datetime]:
    return lambda: datetime.now(UTC)


@pytest.fixture
def make_reconciler(settings, store, runtime, broker, clock) -> Callable[..., ClusterReconciler]:
    """Build a controller; call it again to simulate a restart (fresh objects, same store and engine)."""
    def make(**overrides) -> ClusterReconciler:
        args = {"settings": settings, "store": store, "runtime": runtime, "broker": broker, "clock": clock}
        args.update(overrides)
        return ClusterReconciler(args["settings"], args["store"], args["runtime"], args["broker"], args["clock"])
    return make


@pytest.fixture
def reconciler(make_reconciler) -> ClusterReconciler:
    return make_reconciler()


@pytest.fixture
def managed_filter(stack) -> dict:
    return {"label": [f"{MANAGED}=true", f"amlemu.stack={stack}"]}


@pytest.fixture
def lab(settings, store, runtime, broker, docker_client, redis_host_url) -> Iterator[Lab]:
    lab = Lab(settings, store, runtime, broker, docker_client, redis_host_url)
    yield lab
    lab.controller.close()  # before the stack's containers are swept: a sandbox starting now would outlive it
