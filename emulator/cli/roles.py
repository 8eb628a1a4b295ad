"""`amlemu token` and `amlemu roles`: bearer tokens for named principals holding one of Azure's built-in roles,
and the table of what each role may do."""

import typer
from rich.console import Console

from emulator import tokens
from emulator.cli.stack import Stack
from emulator.domain import roles
from emulator.errors import ValidationFailed

console = Console(stderr=True)
ROLE_HELP = "One of: " + ", ".join(roles.ROLE_NAMES) + "."


def workspace_scope(stack: Stack, workspace: str | None) -> str:
    if workspace is None:
        return "/"
    return (f"/subscriptions/{stack.subscription}/resourceGroups/{stack.resource_group}"
            f"/providers/{roles.MLS}/workspaces/{workspace}")


def token(role: str = typer.Option(..., "--role", help=ROLE_HELP),
          workspace: str | None = typer.Option(None, "--workspace", help="Grant the role in this workspace only "
                                               "(default: every workspace)."),
          principal: str = typer.Option("amlemu-principal", "--principal", help="Who the token names.")) -> None:
    """Print a management token for a principal holding ROLE: give it to the SDK or curl as a bearer token."""
    definition = roles.role_named(role)
    if definition is None:
        raise ValidationFailed(f"Unknown role '{role}'. {ROLE_HELP}", target="role")
    stack = Stack.from_env()
    key = stack.home / "token.key"
    if not key.exists():
        console.print("[red]the emulator has not been started yet[/]: run `make up` first")
        raise typer.Exit(1)
    value, _ = tokens.issue_for_role(key.read_bytes(), stack.url, principal, definition.name,
                                     workspace_scope(stack, workspace))
    print(value)


def roles_table(markdown: bool = typer.Option(False, "--markdown", help="As the README's Markdown table.")) -> None:
    """The built-in roles `amlemu token` can grant, and the ARM operations each allows."""
    if markdown:
        print(roles.markdown_table(), end="")
        return
    for role in roles.ROLES:
        console.print(f"[bold]{role.name}[/] ({role.id}): {role.description}")
        console.print("  allows " + ", ".join(role.actions)
                      + (("; denies " + ", ".join(role.not_actions)) if role.not_actions else ""))
