"""Level-based ownership of long-lived containers: each record reconciles the containers whose label names it,
and containers naming no record (deleted while the controller was down) go."""

import logging
from collections.abc import Callable, Iterable

from emulator.controller.steps import Steps
from emulator.runtime.base import Containers, Observed

log = logging.getLogger("amlemu.controller")


def reconcile_owned(keys: Iterable[str], containers: list[Observed], label: str,
                    reconcile: Callable[[str, list[Observed]], None], runtime: Containers, what: str,
                    steps: Steps) -> None:
    """Each record on its own (`steps`): one that fails is logged and keeps its containers; the others go on."""
    by_key: dict[str, list[Observed]] = {}
    for container in containers:
        by_key.setdefault(container.labels.get(label, ""), []).append(container)
    for key in keys:
        steps.run(f"{what} {key}", reconcile, key, by_key.pop(key, []))
    for orphans in by_key.values():
        for container in orphans:
            log.info("removing orphan %s %s", what, container.name)
            runtime.remove(container.id)
