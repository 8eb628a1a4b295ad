"""Capacity shortages in force, kept in the store so a restart keeps them: the settings' standing shortage and seeded
schedule, and those asked for through /_emulator/capacity (`amlemu capacity`); what a cluster that cannot get nodes
shows (Azure's allocation error in its `errors`, a warning on its queued jobs, `capacity.short` then
`capacity.restored` on the timeline, once each). The rules are in domain/compute/capacity.py."""

import random
from datetime import UTC, datetime

from emulator.domain import events as kinds
from emulator.domain.compute import capacity, vm_sizes
from emulator.domain.compute.capacity import Policy, Schedule, Scope, Shortage
from emulator.services import computes, events, quotas
from emulator.settings import Settings
from emulator.store.repositories import Repository
from emulator.store.tables import CapacityState, Compute

FAMILIES = {size.family for size in vm_sizes.VM_SIZES}
SINCE_EVER = datetime(2000, 1, 1, tzinfo=UTC)  # when the settings' standing shortage began: before anything
UPCOMING = 5  # the schedule's windows a view lists


def _scope(settings: Settings) -> Scope:
    return Scope(settings.capacity_region, settings.capacity_family, settings.capacity_priority)


def _settings_policy(settings: Settings) -> Policy:
    return Policy(settings.capacity_every_seconds, settings.capacity_for_seconds, settings.capacity_seed,
                  _scope(settings))


def _row(repo: Repository) -> CapacityState:
    row = repo.capacity()
    if row is None:
        row = CapacityState(scope="*", shortages=[], schedule=None, restored_at=None)
        repo.add(row)
    return row


def shortages(repo: Repository, settings: Settings, now: datetime) -> list[Shortage]:
    """The shortages asked for that have not ended, and the settings' standing one unless it was restored."""
    row = repo.capacity()
    asked = [Shortage.from_row(s) for s in (row.shortages if row else [])]
    standing = [Shortage(_scope(settings), SINCE_EVER)] if settings.capacity_short and not (row and row.restored_at) \
        else []
    return [s for s in [*standing, *asked] if s.end is None or s.end > now]


def _drawn(policy: Policy, now: datetime, source: str, entropy: random.Random) -> dict:
    return {"policy": policy.to_row(), "seed": capacity.with_seed(policy, entropy).seed, "since": now.isoformat(),
            "source": source}


def schedule(repo: Repository, settings: Settings, now: datetime, entropy: random.Random | None) -> Schedule | None:
    """The seeded schedule in force. The settings' is drawn from the first time it is looked at with `entropy` (the
    controller's pass), and drawn afresh when the settings change; one set on demand stays until set again."""
    row = repo.capacity()
    drawn = row.schedule if row else None
    if drawn is None or drawn["source"] == "settings":
        wanted = _settings_policy(settings)
        if wanted.every is None:
            return None
        if drawn is None or drawn["policy"] != wanted.to_row():
            if entropy is None:  # not drawn yet: the controller's next pass draws it
                return None
            drawn = _row(repo).schedule = _drawn(wanted, now, "settings", entropy)
    if "since" not in drawn:  # turned off on request
        return None
    return capacity.schedule_of(Policy.from_row(drawn["policy"]), drawn["seed"], datetime.fromisoformat(drawn["since"]),
                                settings.scaled)


def for_cluster(repo: Repository, settings: Settings, compute: Compute, now: datetime,
                entropy: random.Random | None = None) -> Shortage | None:
    """The shortage that keeps the cluster's VMs from being allocated now, if any."""
    spec = computes.spec_of(compute)
    return capacity.in_force(shortages(repo, settings, now), schedule(repo, settings, now, entropy),
                             compute.location, spec.vm_size.family, spec.priority, now)


def short(compute: Compute) -> bool:
    return any(e.get("error", {}).get("code") == capacity.SHORT_CODE for e in compute.errors or [])


def held_back(repo: Repository, compute: Compute, nodes: int, shortage: Shortage | None, now: datetime) -> None:
    """After a scale plan: `nodes` the cluster asked for could not be allocated. A wait begins (Azure's error on the
    compute and on its queued jobs, a `capacity.short` event, once), goes on, or ends (`capacity.restored`)."""
    was_short = short(compute)
    others = [e for e in compute.errors or [] if e.get("error", {}).get("code") != capacity.SHORT_CODE]
    if nodes and shortage is not None:
        error = capacity.short_error(computes.spec_of(compute).priority)
        if not was_short:
            compute.errors = [error, *others]
            events.record(repo, compute.workspace_key, kinds.CAPACITY_SHORT, compute.key, now, heldBack=nodes,
                          until=shortage.end.isoformat() if shortage.end else None, message=error["error"]["message"],
                          **shortage.scope.to_row())
        for job in repo.jobs_in(("Queued",), compute.key):
            quotas.warn(job, error["error"]["message"])
        return
    if was_short:
        compute.errors = others or None
        events.record(repo, compute.workspace_key, kinds.CAPACITY_RESTORED, compute.key, now)


def view(repo: Repository, settings: Settings, now: datetime) -> dict:
    """What is short now and what will be: the shortages, and the schedule with its next windows."""
    row = repo.capacity()
    drawn = row.schedule if row else None
    policy = Policy.from_row(drawn["policy"]) if drawn else _settings_policy(settings)
    current = schedule(repo, settings, now, None)
    return {
        "shortages": [{**s.to_row(), "source": "settings" if s.start == SINCE_EVER else "request"}
                      for s in shortages(repo, settings, now)],
        "schedule": {**policy.to_row(), "seed": drawn.get("seed") if drawn else policy.seed,
                     "since": drawn.get("since") if drawn else None,
                     "source": drawn["source"] if drawn else "settings",
                     "windows": [w.to_row() for w in current.upcoming(now, UPCOMING)] if current else []},
    }


def add(repo: Repository, settings: Settings, body: object, now: datetime) -> Shortage:
    shortage = capacity.parse_shortage(body, FAMILIES, now, settings.scaled)
    row = _row(repo)
    row.shortages = [*[s for s in row.shortages if not _ended(s, now)], shortage.to_row()]
    return shortage


def _ended(stored: dict, now: datetime) -> bool:
    end = Shortage.from_row(stored).end
    return end is not None and end <= now


def restore(repo: Repository, now: datetime) -> None:
    """Capacity returns now: every shortage ends, the settings' standing one too, and random shortages stop."""
    row = _row(repo)
    row.shortages, row.restored_at = [], now
    row.schedule = {"policy": Policy().to_row(), "source": "request"}


def set_schedule(repo: Repository, body: object, now: datetime, entropy: random.Random) -> None:
    policy = capacity.parse_policy(body, FAMILIES)
    _row(repo).schedule = _drawn(policy, now, "request", entropy) if policy.every is not None else \
        {"policy": policy.to_row(), "source": "request"}
