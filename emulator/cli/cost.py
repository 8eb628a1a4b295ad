"""`amlemu cost`: what the emulator's VMs would have cost in Azure (GET /_emulator/cost), and a workspace's budget."""

import json

import typer
from rich.console import Console, Group
from rich.table import Table
from rich.text import Text

from emulator.cli import rest
from emulator.cli.stack import Stack

JOBS_SHOWN = 20


def _money(dollars: float) -> str:
    return f"${dollars:,.4f}" if dollars < 1 else f"${dollars:,.2f}"


def render(report: dict) -> Group:
    """One workspace's report: its computes, its costliest jobs, the total against its budget."""
    computes = Table(title=f"workspace {report['workspace']}: retail prices of {report['region']} (USD)",
                     title_justify="left")
    for column in ("compute", "kind", "VM size", "priority", "VM-hours", "$/hour", "cost", "if dedicated",
                   "if low priority"):
        computes.add_column(column, no_wrap=True, justify="right" if column[0] in "V$cil" else "left")
    for line in report["computes"]:
        # a compute instance cannot be low priority: nothing to compare it with
        low = "-" if line["kind"] == "instance" else _money(line["lowPriorityDollars"])
        computes.add_row(line["name"], line["kind"], line["vmSize"], line["priority"], f"{line['seconds'] / 3600:.3f}",
                         f"{line['dollarsPerHour']:.4f}", _money(line["dollars"]), _money(line["dedicatedDollars"]), low)
    jobs = Table(title="jobs (node-hours they held)", title_justify="left")
    for column in ("job", "compute", "node-hours", "cost"):
        jobs.add_column(column, no_wrap=True)
    for job in sorted(report["jobs"], key=lambda j: -j["dollars"])[:JOBS_SHOWN]:
        jobs.add_row(job["name"], job["compute"], f"{job['nodeSeconds'] / 3600:.3f}", _money(job["dollars"]))
    total = Text(f"total: {_money(report['dollars'])}")
    budget = report.get("budget")
    if budget:
        over = budget.get("exceededAt")
        total.append(f"  budget {_money(budget['dollars'])}: ")
        total.append(f"exceeded at {over}" if over else "within", style="red" if over else "green")
    return Group(computes, jobs, total)


def cost(workspace: str | None = typer.Option(None, help="A workspace (default: every workspace)."),
         region: str | None = typer.Option(None, help="Price in this Azure region (eastus, westeurope, ...; "
                                                      "default: the workspace's, else eastus)."),
         budget: float | None = typer.Option(None, help="Set the workspace's budget in USD (0 removes it): a "
                                                        "budget.exceeded event once its cost reaches it."),
         as_json: bool = typer.Option(False, "--json", help="The report as JSON.")) -> None:
    """What the VMs of your clusters, compute instances and deployments would have cost in Azure: per compute, per
    job, per workspace."""
    stack = Stack.from_env()
    client = rest.running_client(stack)
    if budget is not None:
        body = {"dollars": budget or None, "region": region}
        rest.answer(client.put("/_emulator/budgets", params={"workspace": workspace or stack.workspace}, json=body))
    params = {k: v for k, v in (("workspace", workspace), ("region", region)) if v}
    reports = rest.answer(client.get("/_emulator/cost", params=params))["value"]
    if as_json:
        print(json.dumps(reports, indent=2))
        return
    console = Console()
    for report in reports:
        console.print(render(report))
