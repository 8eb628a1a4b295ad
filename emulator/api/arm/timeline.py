"""Shapes of the event timeline (JSON and server-sent events) and of the cost meter's report."""

import json

from emulator.api.arm.envelope import iso
from emulator.services.cost import Report
from emulator.services.rows import Event


def event(row: Event) -> dict:
    return {"id": row.id, "time": iso(row.time), "kind": row.kind, "subject": row.subject,
            "workspace": row.workspace_key, "data": row.data}


def events(rows: list[Event]) -> dict:
    """A page of events; `last`: the id to ask after for the next one (the one asked after when none came)."""
    return {"value": [event(row) for row in rows], "last": rows[-1].id if rows else None}


def sse(row: Event) -> str:
    """One server-sent event: its id resumes a stream (Last-Event-ID), its type is the event's kind."""
    return f"id: {row.id}\nevent: {row.kind}\ndata: {json.dumps(event(row), separators=(',', ':'))}\n\n"


def _money(dollars: float) -> float:
    return round(dollars, 6)


def cost(reports: list[Report]) -> dict:
    return {"value": [{
        "workspace": report.workspace, "region": report.region, "currency": "USD",
        "dollars": _money(report.dollars), "budget": report.budget,
        "computes": [{"id": line.key, "name": line.name, "kind": line.kind, "vmSize": line.vm_size,
                      "priority": line.priority, "seconds": round(line.seconds, 3), "dollars": _money(line.dollars),
                      "dollarsPerHour": line.per_hour, "dedicatedDollars": _money(line.dedicated_dollars),
                      "lowPriorityDollars": _money(line.low_priority_dollars)} for line in report.lines],
        "jobs": [{"id": job.key, "name": job.name, "compute": job.compute, "nodeSeconds": round(job.seconds, 3),
                  "dollars": _money(job.dollars)} for job in report.jobs],
    } for report in reports]}
