"""`amlemu instance`: a compute instance's terminal and URLs, from the host."""

import os
import shutil

import typer
from rich.console import Console

from emulator.cli.stack import Stack
from emulator.runtime import labels

app = typer.Typer(help="Compute instances: open a shell in one, show how to reach it.", no_args_is_help=True)
console = Console()


def _workstation(stack: Stack, name: str, workspace: str | None):
    from emulator.runtime.docker import DockerRuntime

    wanted = {labels.STACK: stack.label, labels.ROLE: "instance", labels.COMPUTE: name,
              labels.WORKSPACE: (workspace or stack.workspace).lower()}
    running = [c for c in DockerRuntime().list(wanted) if c.running]
    if not running:
        console.print(f"[red]compute instance {name} is not running[/]: start it with "
                      f"ml_client.compute.begin_start({name!r}) (or check the name with `amlemu status`)")
        raise typer.Exit(1)
    return running[0]


@app.command()
def shell(name: str = typer.Argument(..., help="The compute instance."),
          workspace: str | None = typer.Option(None, help="The workspace (default: AMLEMU_WORKSPACE)."),
          command: list[str] = typer.Argument(None, help="Run this instead of an interactive bash.")) -> None:
    """Open a terminal on the instance, as its user (azureuser), in its home."""
    container = _workstation(Stack.from_env(), name, workspace)
    docker = shutil.which("docker")
    if docker is None:
        console.print("[red]the docker CLI is not on PATH[/]: install it to open a shell")
        raise typer.Exit(1)
    interactive = ["-it"] if os.isatty(0) and os.isatty(1) else ["-i"]
    argv = [docker, "exec", *interactive, "-w", "/home/azureuser", container.id, *(command or ["bash", "-l"])]
    os.execv(docker, argv)
