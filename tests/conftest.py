"""`make test` runs the suite on four pytest-xdist workers (`-n 4 --dist loadgroup`): the end-to-end tests'
composed stacks are one group, the other clients' (each SDK release and the Azure CLI in a venv of its own, mostly
waiting on pip) a second with a stack of its own, the integration tests' lab (and the runtime contract on Docker) a
third, each run in order on its own worker as it would be alone, while the fourth takes the tests that need no Docker. Docker
tests mostly wait on containers, the others on the CPU, so the three overlap well. A stack and a lab never meet:
everything each starts carries its own `amlemu.stack` label, and each only lists and removes what has its own."""

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.databases import Databases, postgres_container, sqlite_url

E2E_GROUP, CLIENTS_GROUP, LAB_GROUP, FAST_GROUP = "e2e", "e2e-clients", "lab", "no-docker"
# They install SDK releases and the Azure CLI; the assets' release matrix, the Kubernetes pods, the preemption demo,
# and the tests that start stacks of their own (the attached VM's, PostgreSQL's, the users' suites of the package
# tests) too, which evens the groups out (measured in a 1742 s run: lab 1700 s, e2e 1687 s, clients 1274 s, with the
# users' suites, 245 s, in the lab and the demo, 65 s, in e2e).
CLIENT_MODULES = {"test_sdk_versions.py", "test_az_cli.py", "test_assets_sdk.py", "test_attached_vm_jobs_sdk.py",
                  "test_kubernetes_pods_e2e.py", "test_postgres_stack.py", "test_user_project.py",
                  "test_demo_preemption.py"}
# End-to-end tests on stacks of their own, on the lab's worker: the e2e worker was the last to finish (a 1947 s run:
# e2e 1906 s, clients 1810 s, lab 1435 s, with compose up's 189 s in e2e).
LAB_MODULES = {"test_compose_up.py"}
E2E_FOLDER = Path(__file__).parent / "e2e"
LAB_FOLDER = Path(__file__).parent / "integration"


def _group(item) -> str:
    # Read from the item itself: the folders' own hooks that add `docker` may run after this one.
    path = Path(str(item.path))
    if path.name in CLIENT_MODULES:
        return CLIENTS_GROUP
    if path.name in LAB_MODULES:
        return LAB_GROUP
    if E2E_FOLDER in path.parents:
        return E2E_GROUP
    if LAB_FOLDER in path.parents or item.get_closest_marker("docker") is not None:
        return LAB_GROUP
    return FAST_GROUP


def pytest_addoption(parser):
    parser.addoption("--store", choices=("sqlite", "postgresql"), default="sqlite",
                     help="the state store of the api's service tests (tests/service): PostgreSQL runs them all on "
                          "the session's server (the store's own tests take both either way)")


@pytest.hookimpl(tryfirst=True)  # before xdist's own hook turns the group mark into the test's group
def pytest_collection_modifyitems(config, items):
    for item in items:
        item.add_marker(pytest.mark.xdist_group(_group(item)))


@pytest.fixture(scope="session")
def postgres_databases() -> Iterator[Databases]:
    """One PostgreSQL server for the session (on an xdist worker: the worker's), in a container unless
    AMLEMU_TEST_POSTGRES_URL names one."""
    given = os.environ.get("AMLEMU_TEST_POSTGRES_URL")
    with contextlib.nullcontext(given) if given else postgres_container() as admin_url:
        databases = Databases(admin_url)
        yield databases
        databases.close()


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.docker)])
def database_url(request, tmp_path) -> Iterator[str]:
    """The state store's URL: each test that takes it runs on SQLite (a file in its folder) and on PostgreSQL (a
    database of its own on the session's server)."""
    if request.param == "sqlite":
        yield sqlite_url(tmp_path)
        return
    with request.getfixturevalue("postgres_databases").fresh() as url:
        yield url
