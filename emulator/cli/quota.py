"""`amlemu quota`: the core quotas in force (GET /_emulator/quotas), set for every region or capped per workspace."""

import json

import typer
from rich.console import Console
from rich.table import Table

from emulator.cli import rest
from emulator.cli.stack import Stack


def render(view: dict) -> Table:
    limits, override = view["limits"], view.get("override") or {}
    scope = f"workspace {view['workspace']}" if view.get("workspace") else "every region"
    table = Table(title=f"core quotas (vCPUs) of {scope}", title_justify="left")
    for column in ("quota", "limit", "set here"):
        table.add_column(column, no_wrap=True)
    rows = [("TotalDedicatedCores", limits["totalDedicatedCores"], "totalDedicatedCores" in override),
            ("TotalLowPriorityCores", limits["lowPriorityCores"], "lowPriorityCores" in override)]
    rows += [(family, limit, family in override.get("families", {})) for family, limit in limits["families"].items()]
    for name, limit, set_here in rows:
        table.add_row(name, str(limit), "yes" if set_here else "")
    return table


def _parse_family(value: str) -> tuple[str, int | None]:
    name, _, cores = value.partition("=")
    if cores != "default" and not cores.isdigit():
        raise typer.BadParameter(f"expected FAMILY=VCPUS (e.g. standardDSv2Family=48, or =default), got {value!r}")
    return name, None if cores == "default" else int(cores)


def quota(workspace: str | None = typer.Option(None, help="Cap this workspace only (default: every region)."),
          family: list[str] = typer.Option([], "--family", help="FAMILY=VCPUS, e.g. standardDSv2Family=48 "
                                                               "(=default removes it); repeatable."),
          total: int | None = typer.Option(None, help="Dedicated vCPUs of all families together (-1: default)."),
          low_priority: int | None = typer.Option(None, help="Low-priority vCPUs across families (-1: default)."),
          as_json: bool = typer.Option(False, "--json", help="The quotas as JSON.")) -> None:
    """Show or set the core quotas clusters and compute instances are held to (Azure's defaults until set)."""
    params = {"workspace": workspace} if workspace else {}
    body: dict = {}
    if family:
        body["families"] = dict(_parse_family(f) for f in family)
    for key, value in (("totalDedicatedCores", total), ("lowPriorityCores", low_priority)):
        if value is not None:
            body[key] = None if value < 0 else value
    client = rest.running_client(Stack.from_env())
    view = rest.answer(client.put("/_emulator/quotas", params=params, json=body) if body
                       else client.get("/_emulator/quotas", params=params))
    if as_json:
        print(json.dumps(view, indent=2))
        return
    Console().print(render(view))
