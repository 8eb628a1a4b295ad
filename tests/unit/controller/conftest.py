"""A store of its own per test: the controller's pure-ish parts read and write it as in a real pass. For the
reconcilers: the runtime in memory (FakeRuntime), a Redis in memory (fakeredis) and a clock that moves only when
the test says so."""

from datetime import UTC, datetime, timedelta

import fakeredis
import pytest

from emulator.api.arm import computes as arm
from emulator.controller.effects import Actuator
from emulator.controller.scheduling.scheduler import JobScheduler
from emulator.domain.ids import WorkspaceRef
from emulator.runtime.fake import FakeRuntime
from emulator.runtime.labels import ROLE, STACK
from emulator.services import assets, computes, kubernetes, workspaces
from emulator.settings import Settings
from emulator.store.db import Store
from emulator.store.tables import Compute, Node, Operation
from tests.kube_api import FakeKubeApi

NOON = datetime(2026, 1, 1, 12, tzinfo=UTC)


@pytest.fixture
def store(settings):
    """On SQLite and on PostgreSQL (tests/conftest.py database_url)."""
    store = Store(settings.db_url)
    yield store
    store.close()


class Clock:
    """The controller's `now`: it moves only by `advance`."""

    def __init__(self, start: datetime = NOON):
        self.now = start

    def __call__(self) -> datetime:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += timedelta(seconds=seconds)


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def settings(tmp_path, database_url) -> Settings:
    """Platform timers at their real length (time scale 1): the clock is the test's anyway."""
    return Settings(stack="unit", data_dir=tmp_path, database_url=database_url, time_scale=1.0, resource_scale=0.25,
                    provisioning_delay_seconds=0.0)


@pytest.fixture
def fake(settings, clock) -> FakeRuntime:
    """The engine with the stack's own network made (compose makes it before the controller starts)."""
    runtime = FakeRuntime(clock)
    runtime.ensure_network(settings.docker_network, {STACK: settings.stack})
    return runtime


@pytest.fixture
def broker():
    broker = fakeredis.FakeRedis()
    yield broker
    broker.close()


@pytest.fixture
def scheduler(settings, fake) -> JobScheduler:
    return JobScheduler(settings, fake.has_gpus)


@pytest.fixture
def act(settings, fake, broker) -> Actuator:
    """Carries out effects as the controller's does, but sends no job message (there is no node to take it)."""
    return Actuator(fake, broker, settings.stack)


class Azure:
    """The default workspace, made, and the store as Azure shows it (each read a transaction of its own)."""

    def __init__(self, settings: Settings, store: Store, fake: FakeRuntime, clock: Clock):
        self.settings, self.store, self.fake, self.clock = settings, store, fake, clock
        self.ref: WorkspaceRef = workspaces.default_ref(settings)
        with store.transaction() as repo:
            workspaces.ensure_default(repo, settings, clock())

    def key(self, name: str) -> str:
        return self.ref.child_id("computes", name).lower()

    def compute(self, name: str) -> Compute | None:
        with self.store.transaction() as repo:
            return repo.compute(self.key(name))

    def nodes(self, name: str) -> list[Node]:
        with self.store.transaction() as repo:
            return repo.nodes(self.key(name))

    def view(self, name: str) -> dict:
        """A cluster's inner properties as the ARM api renders them (allocationState, node counts, errors)."""
        with self.store.transaction() as repo:
            row = repo.compute(self.key(name))
            return arm.compute(row, repo.nodes(row.key), repo.workspace(row.workspace_key))["properties"]["properties"]

    def operations(self, key: str) -> list[tuple[str, str]]:
        """(action, status) of the resource's long-running operations, oldest first."""
        with self.store.transaction() as repo:
            rows = repo.session.query(Operation).filter(Operation.resource_key == key.lower())
            return [(op.action, op.status) for op in rows.order_by(Operation.created_at)]

    def containers(self, role: str, **labels: str) -> list:
        """The stack's containers of that role as the engine lists them, oldest first."""
        return self.fake.list({STACK: self.settings.stack, ROLE: role, **labels})[::-1]

    def removed(self) -> set[str]:
        """The ids of every container the engine was asked to remove."""
        return {call[1] for call in self.fake.calls if call[0] == "remove"}

    def signals(self) -> list[tuple[str, str]]:
        """(container id, signal) of every signal the engine was asked to send, in order."""
        return [call[1:] for call in self.fake.calls if call[0] == "signal"]

    def runs(self, role: str) -> list:
        """The specs of every run the engine was asked for, for containers of that role."""
        return [call[1] for call in self.fake.calls if call[0] == "run" and call[1].labels.get(ROLE) == role]


@pytest.fixture
def azure(settings, store, fake, clock) -> Azure:
    return Azure(settings, store, fake, clock)


PY_ENV = "py"


@pytest.fixture
def py_and_cpu(azure) -> None:
    """Environment `py` (python:3.11-slim, version 1) and cluster `cpu` (0 to 2 nodes), for the parent jobs' tests."""
    with azure.store.transaction() as repo:
        assets.put(repo, azure.ref, assets.ENVIRONMENTS, PY_ENV, "1", {"properties": {"image": "python:3.11-slim"}},
                   azure.clock())
        computes.put(repo, azure.ref, repo.workspace(azure.ref.key), "cpu", {"properties": {
            "computeType": "AmlCompute", "properties": {"vmSize": "Standard_DS3_v2",
                                                        "scaleSettings": {"minNodeCount": 0, "maxNodeCount": 2}}}},
            azure.clock())


AKS = "/subscriptions/s1/resourceGroups/rg/providers/Microsoft.ContainerService/managedClusters/aks1"


@pytest.fixture
def sqlite_only(database_url):
    """For the tests at the Kubernetes API boundary: it is the same on either store."""
    if database_url and database_url.startswith("postgresql"):
        pytest.skip("the API boundary is the same on either store")


@pytest.fixture
def api(settings):
    """A stand-in Kubernetes API server (tests/kube_api.py) with namespaces default and ml, its kubeconfig where the
    user puts one for the cluster AKS."""
    server = FakeKubeApi(namespaces={"default", "ml"})
    server.write_kubeconfig(kubernetes.kubeconfig_path(settings.data_dir, AKS))
    yield server
    server.close()
