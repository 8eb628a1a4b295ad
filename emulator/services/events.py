"""The event timeline: each platform event is added to the transaction that commits the change it tells of, so it
is recorded once or not at all, never for a change that was rolled back. Read after an id, for live streams."""

from datetime import datetime

from sqlalchemy.orm import object_session

from emulator.domain import events as kinds
from emulator.domain.compute import instance
from emulator.domain.events import Happened
from emulator.domain.serving import deployments
from emulator.store.repositories import Repository
from emulator.store.tables import Compute, Event, Node, OnlineDeployment

MESSAGE_CHARS = 300  # a status message (a failure's log tail) is cut: the job keeps it whole
PAGE = 500


def record(repo: Repository, workspace_key: str, kind: str, subject: str, now: datetime, **data) -> None:
    repo.add(_event(workspace_key, kind, subject, now, data))


def record_beside(row, workspace_key: str, kind: str, subject: str, now: datetime, **data) -> None:
    """Record in the transaction `row` belongs to (for rules that are handed rows, not the repository). A row in no
    session (a rule tried on its own) has no transaction to record in."""
    session = object_session(row)
    if session is not None:
        session.add(_event(workspace_key, kind, subject, now, data))


def _event(workspace_key: str, kind: str, subject: str, now: datetime, data: dict) -> Event:
    if isinstance(data.get("message"), str):
        data["message"] = data["message"][:MESSAGE_CHARS]
    return Event(workspace_key=workspace_key.lower(), time=now, kind=kind, subject=subject.lower(),
                 data={k: v for k, v in data.items() if v is not None})


def of_node(compute: Compute, node: Node, kind: str, now: datetime, **data) -> None:
    """A node's event: its cluster is the subject. Compute instances' job slots are not VMs of their own."""
    if compute.compute_type == "AmlCompute":
        record_beside(node, compute.workspace_key, kind, compute.key, now, node=node.node_id, **data)


def of_instance(row: Compute, before: str | None, now: datetime) -> None:
    """A compute instance's state changed from `before` (None: it is new): recorded when its VM starts or stops
    being billed (what the meter prices)."""
    after = instance.InstanceState(row.instance["state"])
    billed = instance.billing(instance.InstanceState(before) if before else None, after)
    if billed is not None:
        size = row.body["properties"]["properties"].get("vmSize") if billed else None
        record_beside(row, row.workspace_key, kinds.INSTANCE_STARTED if billed else kinds.INSTANCE_STOPPED, row.key,
                      now, state=after.value, vmSize=size)


def workspace_of(deployment: OnlineDeployment) -> str:
    return deployment.endpoint_key.split("/onlineendpoints/")[0]


def of_deployment(row: OnlineDeployment, before: list[dict], after: list[dict], now: datetime) -> None:
    """Its instances changed: recorded when how many run, or how many are ready, did (what the meter bills)."""
    def counts(instances: list[dict]) -> tuple[int, int]:
        return len(instances), sum(bool(i.get("ready")) for i in instances)
    if counts(before) != counts(after):
        record_beside(row, workspace_of(row), kinds.DEPLOYMENT_INSTANCES, row.key, now, instances=len(after),
                      ready=counts(after)[1], instanceType=deployments.priced_as(row.body))


def after(repo: Repository, workspace_key: str | None, after_id: int, limit: int = PAGE,
          kinds_wanted: tuple[str, ...] = (), subject: str | None = None, newest: bool = False) -> list[Event]:
    """A page of events after `after_id`: of `kinds_wanted` (none: all), about `subject` or what is under it (a
    job's key, or a workspace's for all of it); `newest`: the last page, newest first."""
    return repo.events_after(workspace_key, after_id, max(1, min(limit, PAGE)), kinds_wanted, subject, newest)


def happened(rows: list[Event]) -> list[Happened]:
    return [Happened(row.time, row.kind, row.subject, row.data) for row in rows]


def all_of(repo: Repository, workspace_key: str | None, kinds_wanted: tuple[str, ...]) -> list[Happened]:
    """Every retained event of these kinds (of one workspace, or all), page by page."""
    found, last = [], 0
    while page := repo.events_after(workspace_key, last, 5000, kinds_wanted):
        found += happened(page)
        last = page[-1].id
    return found


INSTANCE_KINDS = (kinds.INSTANCE_STARTED, kinds.INSTANCE_STOPPED)
NODE_KINDS = (kinds.NODE_ADDED, kinds.NODE_UP, kinds.NODE_LEAVING, kinds.NODE_NOTICE, kinds.NODE_PREEMPTED,
              kinds.NODE_UNUSABLE, kinds.NODE_GONE)
