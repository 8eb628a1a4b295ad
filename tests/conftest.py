"""`make test` runs the suite on two pytest-xdist workers (`-n 2 --dist loadgroup`): everything that drives Docker
(the runtime contract on Docker, the integration tests' lab, the composed stacks of the end-to-end tests) is one
group, run in order on one worker as it would be alone, while the other worker takes the tests that need no Docker.
The Docker tests mostly wait on containers, the others on the CPU, so the two overlap well; one worker for all of
Docker keeps one composed stack at a time and the Docker tests' order as it is without xdist."""

import pytest

DOCKER_GROUP, FAST_GROUP = "docker", "no-docker"


@pytest.hookimpl(trylast=True)  # after the folders' own hooks have marked their items `docker`
def pytest_collection_modifyitems(config, items):
    for item in items:
        docker = item.get_closest_marker("docker") or item.get_closest_marker("e2e")
        item.add_marker(pytest.mark.xdist_group(DOCKER_GROUP if docker else FAST_GROUP))
