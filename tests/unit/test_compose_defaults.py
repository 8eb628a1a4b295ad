"""What a plain `docker compose up` needs and `amlemu up` used to pass: the services work it out themselves."""

import os
from pathlib import Path

import pytest

from emulator import ownership
from emulator.cli.stack import record_images
from emulator.runtime.docker import own_container_id
from emulator.settings import Settings

CONTAINER = "4f1c" + "0" * 56 + "beef"
MOUNTINFO = f"""\
612 590 0:55 / / rw,relatime master:300 - overlay overlay rw,lowerdir=/var/lib/docker/overlay2/l/X
640 612 254:1 /var/lib/docker/containers/{CONTAINER}/resolv.conf /etc/resolv.conf rw,relatime - ext4 /dev/vda rw
641 612 254:1 /var/lib/docker/containers/{CONTAINER}/hostname /etc/hostname rw,relatime - ext4 /dev/vda rw
642 612 254:1 /home/me/amlemu/.amlemu /var/lib/amlemu rw,relatime - ext4 /dev/vda rw
"""


def test_a_process_in_a_container_finds_its_own_id_in_its_mounts():
    assert own_container_id(MOUNTINFO) == CONTAINER
    assert own_container_id(Path("/proc/self/mountinfo").read_text()) is None  # this test runs on the host


def test_an_empty_host_data_dir_is_unset_not_the_current_folder(monkeypatch):
    monkeypatch.setenv("AMLEMU_HOST_DATA_DIR", "")
    settings = Settings(data_dir=Path("/var/lib/amlemu"))
    assert settings.host_data_dir is None and settings.host_dir == Path("/var/lib/amlemu")


def test_dotenv_names_the_built_image_and_keeps_other_lines(tmp_path):
    dotenv = tmp_path / ".env"
    record_images("amlemu/emulator:latest", dotenv)
    assert "AMLEMU_IMAGE=amlemu/emulator:latest" in dotenv.read_text().splitlines()
    dotenv.write_text(dotenv.read_text() + "MY_OWN=1\n")
    record_images("amlemu/emulator:dev", dotenv)
    lines = dotenv.read_text().splitlines()
    assert "MY_OWN=1" in lines and "AMLEMU_IMAGE=amlemu/emulator:dev" in lines
    assert not any(line == "AMLEMU_IMAGE=amlemu/emulator:latest" for line in lines)


def test_a_service_not_started_as_root_stays_who_it_is(tmp_path, monkeypatch):
    monkeypatch.setattr(os, "getuid", lambda: 1000)
    monkeypatch.setattr(os, "setuid", lambda uid: pytest.fail("no change of user"))
    ownership.run_as_data_owner(tmp_path, tmp_path / "docker.sock")


def test_root_becomes_the_data_folders_owner_with_the_sockets_group(tmp_path, monkeypatch):
    calls = []
    folder, sock = tmp_path / "data", tmp_path / "docker.sock"
    folder.mkdir()
    sock.touch()
    monkeypatch.setattr(os, "getuid", lambda: 0)
    real_stat = Path.stat
    owners = {folder: (1234, 2345), sock: (0, 998)}

    def stat(path, *args, **kwargs):
        if path in owners:
            return os.stat_result((0o40755, 0, 0, 1, *owners[path], 0, 0, 0, 0))
        return real_stat(path, *args, **kwargs)
    monkeypatch.setattr(Path, "stat", stat)
    for name in ("setgroups", "setgid", "setuid"):
        monkeypatch.setattr(os, name, lambda value, name=name: calls.append((name, value)))
    ownership.run_as_data_owner(folder, sock)
    assert calls == [("setgroups", [998]), ("setgid", 2345), ("setuid", 1234)]
    calls.clear()
    owners[folder] = (0, 0)  # made by the engine for a missing bind source: root stays root
    ownership.run_as_data_owner(folder, sock)
    assert calls == []
