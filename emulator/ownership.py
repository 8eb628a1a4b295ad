"""The stack's services run as whoever owns their data folder, so a plain `docker compose up` leaves files the
user's own `amlemu env` can read, as `make up` does, with nothing passed in: the folder is the user's when it
comes with the clone (./.amlemu) or when `amlemu up` made it."""

import os
from pathlib import Path


def run_as_data_owner(data_dir: Path, docker_socket: Path) -> None:
    """Started as root, become the data folder's owner, keeping the Docker socket's group (the controller starts
    containers through it). A folder root owns (the engine made it for a missing bind source) keeps root."""
    if os.getuid() != 0:
        return
    owner = data_dir.stat()
    if owner.st_uid == 0:
        return
    os.setgroups([docker_socket.stat().st_gid] if docker_socket.exists() else [])
    os.setgid(owner.st_gid)
    os.setuid(owner.st_uid)
