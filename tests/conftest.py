"""`make test` runs the suite on three pytest-xdist workers (`-n 3 --dist loadgroup`): the end-to-end tests'
composed stacks are one group, the integration tests' lab (and the runtime contract on Docker) another, each run in
order on its own worker as it would be alone, while the third worker takes the tests that need no Docker. Docker
tests mostly wait on containers, the others on the CPU, so the three overlap well. A stack and a lab never meet:
everything each starts carries its own `amlemu.stack` label, and each only lists and removes what has its own."""

from pathlib import Path

import pytest

E2E_GROUP, LAB_GROUP, FAST_GROUP = "e2e", "lab", "no-docker"
E2E_FOLDER = Path(__file__).parent / "e2e"
LAB_FOLDER = Path(__file__).parent / "integration"


def _group(item) -> str:
    # Read from the item itself: the folders' own hooks that add `docker` may run after this one.
    path = Path(str(item.path))
    if E2E_FOLDER in path.parents:
        return E2E_GROUP
    if LAB_FOLDER in path.parents or item.get_closest_marker("docker") is not None:
        return LAB_GROUP
    return FAST_GROUP


@pytest.hookimpl(tryfirst=True)  # before xdist's own hook turns the group mark into the test's group
def pytest_collection_modifyitems(config, items):
    for item in items:
        item.add_marker(pytest.mark.xdist_group(_group(item)))
