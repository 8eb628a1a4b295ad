"""How the CLI's commands talk to a running stack's REST api (ARM and /_emulator routes)."""

import typer
from rich.console import Console

from emulator.cli.stack import Stack

console = Console(stderr=True)


def running_client(stack: Stack):
    if not stack.healthy():
        console.print(f"[red]amlemu is not running[/] at {stack.url}: run `make up`")
        raise typer.Exit(1)
    return stack.client()


def emulator_url(stack: Stack, workspace: str | None, cluster: str, action: str) -> str:
    return (f"/_emulator/subscriptions/{stack.subscription}/resourceGroups/{stack.resource_group}/providers/"
            f"Microsoft.MachineLearningServices/workspaces/{workspace or stack.workspace}/computes/{cluster}/{action}")


def answer(response) -> dict:
    """The body of a success; an ARM error printed as it says, and exit 1."""
    if response.status_code >= 400:
        error = response.json().get("error", {}) if response.headers.get("content-type", "").startswith(
            "application/json") else {}
        console.print(f"[red]{error.get('code', response.status_code)}[/]: {error.get('message', response.text)}")
        raise typer.Exit(1)
    return response.json()
