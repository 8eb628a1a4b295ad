"""A user who uses testcontainers already: the same stack through AmlEmuContainer."""

import docker

from amlemu.testcontainers import AmlEmuContainer


def test_amlemu_container():
    with AmlEmuContainer().with_env("AMLEMU_TIME_SCALE", "1.0") as emu:
        ml_client = emu.get_ml_client()
        assert ml_client.workspaces.get(ml_client.workspace_name).name == ml_client.workspace_name
        assert emu.get_connection_url() == f"https://localhost:{emu.get_exposed_port(8443)}"
        label = f"amlemu.stack={emu.emulator.stack.label}"
    assert docker.from_env().containers.list(all=True, filters={"label": label}) == []
