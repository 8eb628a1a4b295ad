"""`amlemu studio`: open the Studio in the browser. A browser has no bearer token, so the CLI asks the api, with the
emulated identity's token, for a one-time login link; the browser trades it for a session cookie."""

import webbrowser

import typer
from rich.console import Console

from emulator.cli import rest
from emulator.cli.stack import Stack

console = Console(stderr=True)
PAGES = {"workspaces": "", "jobs": "/jobs", "compute": "/computes", "endpoints": "/endpoints", "timeline": "/timeline"}


def studio(page: str = typer.Argument("workspaces", help=f"Which page: {', '.join(PAGES)}."),
           workspace: str | None = typer.Option(None, help="The workspace (default: AMLEMU_WORKSPACE)."),
           show_only: bool = typer.Option(False, "--print", help="Print the login link; open no browser.")) -> None:
    """Open the Studio's pages in your browser: a local session, good for 12 hours."""
    if page not in PAGES:
        console.print(f"[red]no page {page!r}[/]: one of {', '.join(PAGES)}")
        raise typer.Exit(2)
    open_page(Stack.from_env(), PAGES[page], workspace, show_only, whole_studio=page == "workspaces")


def open_page(stack: Stack, page: str, workspace: str | None = None, show_only: bool = False,
              whole_studio: bool = False) -> None:
    """Open a page of the workspace (`page`: its path under the workspace, e.g. /timeline?subject=c) in a browser
    through a one-time login link; print the link when asked, or when no browser opens."""
    target = "/studio" if whole_studio else (
        f"/studio/subscriptions/{stack.subscription}/resourceGroups/{stack.resource_group}/providers/"
        f"Microsoft.MachineLearningServices/workspaces/{workspace or stack.workspace}{page}")
    link = rest.answer(rest.running_client(stack).post("/_emulator/studio/session", params={"page": target}))["loginUrl"]
    if show_only or not webbrowser.open(link):
        print(link)  # stdout: for a script, or a browser on another screen; it works once, within two minutes
        return
    console.print(f"opened the Studio in your browser ({stack.url}/studio). Its certificate is signed by the "
                  f"emulator's CA: {stack.ca_file}")
