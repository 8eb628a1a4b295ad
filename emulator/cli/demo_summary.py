"""The demo's last words: each job's attempts and result, and whether the results agree."""

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from emulator.cli.demo_timeline import JOB_COLOURS, Summary


def render_summary(summary: Summary, results: dict[str, dict | None], cost: dict | None = None) -> RenderableType:
    """The end: what ran where, how often it was preempted, whether every job got the same result, and what its
    nodes would have cost in Azure (`cost`: the cluster's line of the cost meter)."""
    table = Table(title="summary", title_justify="left")
    for column in ("job", "name", "status", "attempts", "nodes"):
        table.add_column(column, no_wrap=True)
    table.add_column("outputs/result.json")  # wraps in a narrow terminal
    for job in summary.jobs:
        result = results.get(job.name)
        shown = "-" if result is None else " ".join(f"{k}={_short(v)}" for k, v in result.items())
        table.add_row(job.label, job.name, Text(job.status, style=JOB_COLOURS.get(job.status, "")),
                      str(job.attempts), " → ".join(job.nodes), shown)
    takeover = f"; notice to node taken: {_span(summary.takeover_seconds)}" if summary.takeover_seconds else ""
    lines = Text()
    lines.append(f"jobs completed: {summary.completed}/{len(summary.jobs)}\n")
    lines.append(f"preemptions: {summary.preemptions} (asked {summary.requested}{takeover})\n")
    lines.append(f"attempts: {summary.attempts} in all ("
                 + ", ".join(f"{job.label} {job.attempts}" for job in summary.jobs) + ")\n")
    lines.append(f"nodes used: {summary.nodes_used}\n")
    lines.append(f"wall time: {summary.wall_seconds:.1f} s\n")
    if cost:
        lines.append(_cost_line(cost))
    lines.append(_results_line(results))
    return Group(table, lines)


def _cost_line(cost: dict) -> str:
    """Low priority against dedicated for the same node-hours (reruns included), at the region's retail prices."""
    hours, low, dedicated = cost["seconds"] / 3600, cost["lowPriorityDollars"], cost["dedicatedDollars"]
    saved = f", {100 * (1 - low / dedicated):.0f} % less" if dedicated else ""
    return (f"cost in Azure ({cost['vmSize']}, {cost['region']} retail prices): {hours:.3f} node-hours, "
            f"${low:.4f} on low-priority nodes; the same node-hours dedicated: ${dedicated:.4f}{saved}\n")


def _span(seconds: tuple[float, ...]) -> str:
    fastest, slowest = f"{min(seconds):.1f}", f"{max(seconds):.1f}"
    return f"{fastest} s" if fastest == slowest else f"{fastest}-{slowest} s"


def _short(value) -> str:
    return f"{value:.5g}" if isinstance(value, float) else str(value)


def results_agree(results: dict[str, dict | None]) -> bool:
    """Every job has a result, and they are all the same."""
    values = list(results.values())
    return bool(values) and values[0] is not None and all(v == values[0] for v in values)


def _results_line(results: dict[str, dict | None]) -> Text:
    values = list(results.values())
    missing = sum(v is None for v in values)
    if results_agree(results):
        return Text(f"results: identical across the {len(values)} jobs (outputs/result.json)", style="green")
    if not values or missing:
        return Text(f"results: {missing} of {len(values)} job(s) have no result.json", style="red")
    return Text("results: DIFFER between the jobs (outputs/result.json)", style="red")


# ---------------------------------------------------------------- the driver: the stack, through REST and the SDK
