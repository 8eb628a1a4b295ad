"""Removal of what a Docker-backed test made, found by its labels: shared by the integration and contract fixtures."""

import docker
import pytest
from docker.errors import APIError, ImageNotFound, NotFound


def engine_with(image: str, what: str, flag: str, timeout: int = 120) -> docker.DockerClient:
    """A client of the local engine holding `image`: the test skips without an engine (`what` runs in a container)
    and fails without the image (built by `amlemu build <flag>`)."""
    try:
        client = docker.from_env(timeout=timeout)
        client.ping()
    except Exception as exc:  # noqa: BLE001
        pytest.skip(f"{what} runs in a container and the Docker engine is not reachable: {exc}")
    try:
        client.images.get(image)
    except ImageNotFound:
        pytest.fail(f"local image {image} is missing: build it with `amlemu build {flag}` (make test does)")
    return client


def remove_containers(client: docker.DockerClient, filters: dict) -> None:
    for container in client.containers.list(all=True, filters=filters, ignore_removed=True):
        try:
            container.remove(force=True)
        except NotFound:
            pass
        except APIError as exc:
            if exc.status_code != 409:  # 409: removal already in progress
                raise
