"""Run alone by the outer test with --amlemu-url: the stack already running is used, and left running."""


def test_reuses_the_running_stack(amlemu, ml_client):
    assert not amlemu.owned
    assert ml_client.workspaces.get(ml_client.workspace_name).name == ml_client.workspace_name
