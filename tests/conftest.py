"""`make test` runs the suite on two pytest-xdist workers (`-n 2 --dist loadgroup`): everything that drives Docker
(the runtime contract on Docker, the integration tests' lab, the composed stacks of the end-to-end tests) is one
group, run in order on one worker as it would be alone, while the other worker takes the tests that need no Docker.
The Docker tests mostly wait on containers, the others on the CPU, so the two overlap well; one worker for all of
Docker keeps one lab or composed stack at a time and the Docker tests' order as it is without xdist."""

from pathlib import Path

import pytest

DOCKER_GROUP, FAST_GROUP = "docker", "no-docker"
DOCKER_FOLDERS = tuple(Path(__file__).parent / name for name in ("e2e", "integration"))


def _needs_docker(item) -> bool:
    # Read from the item itself: the folders' own hooks that add `docker` may run after this one.
    path = Path(str(item.path))
    return any(folder in path.parents for folder in DOCKER_FOLDERS) or item.get_closest_marker("docker") is not None


@pytest.hookimpl(tryfirst=True)  # before xdist's own hook turns the group mark into the test's group
def pytest_collection_modifyitems(config, items):
    for item in items:
        item.add_marker(pytest.mark.xdist_group(DOCKER_GROUP if _needs_docker(item) else FAST_GROUP))
