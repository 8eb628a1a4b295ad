"""Model-server probes: readiness and liveness as a deployment's probe settings say, asked of each instance over
the scoring network with its key; what they found is kept per container for the endpoint reconciler to decide on."""

import logging
from collections.abc import Callable
from datetime import datetime
from typing import TYPE_CHECKING

import httpx

from emulator.domain.serving import deployments, model_server
from emulator.domain.serving.probing import Probed
from emulator.runtime.base import Containers, Observed
from emulator.store.db import Store

if TYPE_CHECKING:
    from emulator.controller.serving_pods import PodServers

log = logging.getLogger("amlemu.controller")


class ModelServerProbes:
    def __init__(self, store: Store, runtime: Containers, clock: Callable[[], datetime], secret: bytes,
                 http: httpx.Client | None = None, pods: "PodServers | None" = None):
        """`http`: how the instances are reached (a test's answers them itself); by default over the network.
        `pods`: how model servers that are pods on a Kubernetes cluster are (through its API server)."""
        self.store, self.runtime, self.clock, self.secret, self.pods = store, runtime, clock, secret, pods
        self.states: dict[str, Probed] = {}  # container name -> what its probes found
        self.http = http or httpx.Client(timeout=2.0)

    def forget_all_but(self, names: set[str]) -> None:
        self.states = {name: p for name, p in self.states.items() if name in names}

    def close(self) -> None:
        self.http.close()

    def run(self, key: str, containers: list[Observed]) -> set[str]:
        """Readiness and liveness as the deployment's probe settings say (both ask the inference server's
        health route, GET / on 5001, as Azure's do), plus early readiness tries until an instance first answers.
        A container that fails liveness is removed (and replaced); the ids of those removed."""
        if not containers:
            return set()
        with self.store.reading() as repo:  # a read: no write lock taken for each deployment on each pass
            row = repo.online_deployment(key)
            if row is None:
                return set()
            readiness = deployments.probe(row.body["properties"]["readinessProbe"])
            liveness = deployments.probe(row.body["properties"]["livenessProbe"])
        now = self.clock()
        dead = set()
        for container in containers:
            state = self.states.setdefault(container.name, Probed(since=now))
            kind = state.due(now, readiness, liveness) if container.ip else None
            if kind is None:
                continue
            healthy = self._healthy(container, state.timeout(kind, readiness), key)
            if state.record(kind, now, healthy, readiness, liveness):
                log.info("model server %s failed its liveness probe %d times: replacing it", container.name,
                         state.failures)
                self.runtime.remove(container.id)
                dead.add(container.id)
        return dead

    def _healthy(self, container: Observed, timeout: float, deployment_key: str) -> bool:
        key = {model_server.KEY_HEADER: model_server.server_key(self.secret, deployment_key)}
        if self.pods is not None and self.pods.owns(container.id):
            return self.pods.healthy(container.id, timeout, key)
        try:
            return self.http.get(f"http://{container.ip}:{model_server.PORT}/", timeout=timeout, headers=key).status_code == 200
        except httpx.HTTPError:
            return False
