"""What the pipeline end-to-end tests share: a pipeline's steps as the SDK lists them, waiting for a pipeline to end,
holding a step at a gate (tests/gate.py) and letting it go, and where a datastore path is on the host."""

from pathlib import Path

from emulator.domain.ids import WorkspaceRef
from emulator.domain.jobs import artifacts
from emulator.domain.storage import datastores
from tests import gate
from tests.waiting import wait_until

END = ("Completed", "Failed", "Canceled")


def steps(ml_client, parent: str) -> dict:
    """The pipeline's child jobs by step name (a child's display name is its step's name)."""
    children = list(ml_client.jobs.list(parent_job_name=parent))
    by_step = {child.display_name: child for child in children}
    assert len(by_step) == len(children), [(c.name, c.display_name) for c in children]  # one child per step
    return by_step


def statuses(ml_client, parent: str) -> dict[str, str]:
    return {step: child.status for step, child in steps(ml_client, parent).items()}


def wait_for_steps(ml_client, parent: str, wanted: dict[str, str], timeout: float = 180) -> dict:
    """Until each named step has the status wanted, seen in one listing; returns that listing's children."""
    def seen():
        children = steps(ml_client, parent)
        now = {step: child.status for step, child in children.items()}
        assert all(now.get(step) == status for step, status in wanted.items()), f"last seen {now}"
        return children
    return wait_until(seen, timeout=timeout, interval=0.5, message=f"steps of {parent} to be {wanted}")


def wait_ended(ml_client, name: str, timeout: float = 240) -> str:
    return wait_until(lambda: (s := ml_client.jobs.get(name).status) in END and s, timeout=timeout, interval=0.5,
                      message=f"pipeline {name} to end")


def gated(command: str) -> str:
    """The step's command held at a gate after its first part (what it records on starting) until the test opens
    it: the step stays Running as long as the test needs."""
    first, _, rest = command.partition(" && ")
    return f"{first} && {gate.WAIT} && {rest}" if rest else f"{gate.WAIT} && {first}"


def release(ml_client, job_dir, parent: str, *names: str) -> None:
    """Open the gates of steps once each waits at its own (their child jobs' ./outputs)."""
    children = steps(ml_client, parent)
    gate.release(*(job_dir(children[name].name) / "outputs" for name in names), timeout=60)


def datastore_folder(stack, path: str) -> Path:
    """The folder of `path` in the workspace's default datastore (workspaceblobstore), as the host sees it."""
    ref = WorkspaceRef(stack.subscription, stack.resource_group, stack.workspace)
    return stack.home / artifacts.blob_dir(datastores.locate(ref, datastores.BLOB_STORE, path, "path"))
