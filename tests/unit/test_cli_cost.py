"""`amlemu cost` renders the report the api gives: every compute (clusters, compute instances, deployments), the
costliest jobs, and the total against the budget."""

from rich.console import Console

from emulator.cli.cost import render


def _line(name: str, kind: str, priority: str, dollars: float, low: float) -> dict:
    return {"name": name, "kind": kind, "vmSize": "Standard_DS3_v2", "priority": priority, "seconds": 1800.0,
            "dollarsPerHour": 0.293, "dollars": dollars, "dedicatedDollars": 0.1465, "lowPriorityDollars": low}


def test_a_report_shows_clusters_and_instances_and_jobs_and_the_budget():
    report = {"workspace": "amlemu", "region": "eastus", "dollars": 0.176,
              "computes": [_line("spot", "cluster", "LowPriority", 0.0293, 0.0293),
                           _line("my-ci", "instance", "Dedicated", 0.1465, 0.0293)],
              "jobs": [{"name": "job-a", "compute": "spot", "nodeSeconds": 900.0, "dollars": 0.01465}],
              "budget": {"dollars": 0.1, "exceededAt": "2026-11-27T15:00:00+00:00"}}
    console = Console(width=200, record=True, force_terminal=False, color_system=None)
    console.print(render(report))
    text = console.export_text()
    cells = [[cell.strip() for cell in line.split("│")[1:-1]] for line in text.splitlines() if "│" in line]
    rows = {row[0]: row for row in cells}
    assert rows["spot"][-3:] == ["$0.0293", "$0.1465", "$0.0293"]
    assert rows["my-ci"][1:3] == ["instance", "Standard_DS3_v2"] and rows["my-ci"][-3:] == ["$0.1465", "$0.1465", "-"]
    assert "job-a" in text and "0.250" in text and "total: $0.1760  budget $0.1000: exceeded at 2026-11-27" in text
