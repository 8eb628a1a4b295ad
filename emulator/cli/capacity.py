"""`amlemu capacity`: Azure out of VMs for a while (clusters stay Resizing, their jobs Queued) through
/_emulator/capacity: a shortage now, capacity back, or shortages at random with a seed."""

import json

import typer
from rich.console import Console

from emulator.cli import rest
from emulator.cli.stack import Stack

app = typer.Typer(help="Capacity shortages: show them, cause one now, restore capacity, or schedule them at random "
                       "(seeded).", invoke_without_command=True)
console = Console()
AS_JSON = typer.Option(False, "--json", help="What is short, as JSON.")
FAMILY = typer.Option("*", help="The VM family short of capacity (e.g. standardDSv2Family; * for all).")
REGION = typer.Option("*", help="The region short of capacity (* for all).")
DEDICATED = typer.Option(False, "--dedicated", help="Dedicated VMs are short (default: low-priority ones).")


def _scope(family: str, region: str, dedicated: bool) -> dict:
    return {"family": family, "region": region, "priority": "Dedicated" if dedicated else "LowPriority"}


def _what(entry: dict) -> str:
    family = "every family" if entry["family"] == "*" else entry["family"]
    region = "every region" if entry["region"] == "*" else entry["region"]
    return f"{entry['priority']} VMs of {family} in {region}"


def _show(view: dict, as_json: bool) -> None:
    if as_json:
        print(json.dumps(view, indent=2))
        return
    for entry in view["shortages"]:
        console.print(f"short: {_what(entry)}, until {entry['end'] or 'restored'}"
                      f"{' (settings)' if entry['source'] == 'settings' else ''}")
    schedule = view["schedule"]
    if schedule["every"] is None:
        console.print("random shortages: off")
    else:
        console.print(f"random shortages of {_what(schedule)}: on average every {schedule['every']:g} s for "
                      f"{schedule['for']:g} s, seed {schedule['seed']}")
        for window in schedule["windows"]:
            console.print(f"  {window['start']} .. {window['end']}")
    if not view["shortages"] and schedule["every"] is None:
        console.print("capacity: available")


def _send(method: str, path: str, body: dict | None, as_json: bool) -> None:
    client = rest.running_client(Stack.from_env())
    _show(rest.answer(client.request(method, path, json=body)), as_json)


@app.callback()
def capacity(ctx: typer.Context,
             every: float | None = typer.Option(None, help="Random shortages on average every this many seconds "
                                                           "(scaled by AMLEMU_TIME_SCALE)."),
             lasting: float = typer.Option(60.0, "--for", help="Each lasting this many seconds on average."),
             seed: int | None = typer.Option(None, help="Replay the same windows with the same seed."),
             off: bool = typer.Option(False, "--off", help="Stop random shortages."),
             family: str = FAMILY, region: str = REGION, dedicated: bool = DEDICATED, as_json: bool = AS_JSON) -> None:
    """Show the capacity shortages, or schedule random ones (--every, --for, --seed)."""
    if ctx.invoked_subcommand is not None:
        return
    if every is None and not off:
        if seed is not None:
            raise typer.BadParameter("--seed goes with --every (random shortages on average every so many seconds)")
        _send("GET", "/_emulator/capacity", None, as_json)
        return
    body = {"every": None if off else every, "for": lasting, "seed": seed, **_scope(family, region, dedicated)}
    _send("PUT", "/_emulator/capacity/schedule", body, as_json)


@app.command()
def short(seconds: float | None = typer.Option(None, help="For this many seconds (scaled by AMLEMU_TIME_SCALE; "
                                                          "default: until `amlemu capacity restore`)."),
          family: str = FAMILY, region: str = REGION, dedicated: bool = DEDICATED, as_json: bool = AS_JSON) -> None:
    """No capacity from now: clusters that need nodes stay Resizing with Azure's allocation error."""
    _send("PUT", "/_emulator/capacity", {"seconds": seconds, **_scope(family, region, dedicated)}, as_json)


@app.command()
def restore(as_json: bool = AS_JSON) -> None:
    """Capacity returns: every shortage ends (the settings' too), random shortages stop."""
    _send("DELETE", "/_emulator/capacity", None, as_json)
