"""The steps of a reconcile pass, each on its own: one that raises is logged and the others still run (a cluster
whose record cannot be read must not stall the instances, endpoints or other clusters). The stack is logged the
first time a step fails and again only when its failure changes; recovery is said once."""

import logging
from collections.abc import Callable

log = logging.getLogger("amlemu.controller")


class Steps:
    def __init__(self):
        self.failing: dict[str, str] = {}  # step -> what it last failed with

    def run(self, name: str, step: Callable[..., object], *args) -> bool:
        """Run `step(*args)`; False when it raised."""
        try:
            step(*args)
        except Exception as exc:  # noqa: BLE001 (isolating the steps is the point)
            said = f"{type(exc).__name__}: {exc}"
            if self.failing.get(name) != said:
                log.exception("reconcile step '%s' failed; the pass goes on without it", name)
            self.failing[name] = said
            return False
        if self.failing.pop(name, None) is not None:
            log.info("reconcile step '%s' works again", name)
        return True
