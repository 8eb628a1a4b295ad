"""Removal of what a Docker-backed test made, found by its labels: shared by the integration and contract fixtures."""

import docker
from docker.errors import APIError, NotFound


def remove_containers(client: docker.DockerClient, filters: dict) -> None:
    for container in client.containers.list(all=True, filters=filters, ignore_removed=True):
        try:
            container.remove(force=True)
        except NotFound:
            pass
        except APIError as exc:
            if exc.status_code != 409:  # 409: removal already in progress
                raise
