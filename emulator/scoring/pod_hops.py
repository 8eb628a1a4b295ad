"""The router's hop to a model server that is a pod on a Kubernetes cluster (controller/serving_pods.py): through the
API server's pod proxy, with the kubeconfig the user supplied (runtime/kube.py), since the cluster's network is out of
the router's reach. The official client is synchronous, so each request runs in a thread; a cluster's client is made
once per kubeconfig file, and again when the file changes."""

import asyncio
import json
from collections.abc import Callable
from pathlib import Path

from emulator.domain.serving import model_server
from emulator.runtime import kube
from emulator.scoring import forward
from emulator.services import kubernetes


def _refused(answer: kube.Answer) -> bool:
    """The API server's own failure, not the model server's answer: a Kubernetes `Status` (`error trying to reach
    service` when the pod does not answer, a 500 in v1.20 and a 503 later; `address not allowed` while it has no
    address; the pod not found), as recorded from a real one (tests/kube_recordings)."""
    if answer.status < 400:
        return False
    try:
        found = json.loads(answer.body)
    except ValueError:
        return False
    return isinstance(found, dict) and found.get("kind") == "Status" and found.get("status") == "Failure"


class Hops:
    """The router's hops: to a container over plain HTTP (forward.Pool), to a pod through its API server."""

    def __init__(self, data_dir: Path, connect: Callable[[Path], kube.Cluster] = kube.Cluster):
        self.data_dir, self.connect = data_dir, connect
        self.clusters: dict[str, tuple[float, kube.Cluster]] = {}
        self.pool = forward.Pool()

    def close(self) -> None:
        self.pool.close()

    def _cluster(self, resource_id: str) -> kube.Cluster:
        config = kubernetes.kubeconfig_for(self.data_dir, resource_id)
        if config is None:
            raise kube.Unreachable(f"no kubeconfig for {resource_id}")
        changed = config.stat().st_mtime
        known = self.clusters.get(resource_id)
        if known is None or known[0] != changed:
            known = self.clusters[resource_id] = (changed, self.connect(config))
        return known[1]

    def _hop(self, cluster: str, address: str, method: str, path: str, headers: list[tuple[bytes, bytes]],
             body: bytes, timeout: float) -> forward.Response:
        namespace, _, pod = address.partition("/")
        sent = {name.decode("latin-1"): value.decode("latin-1") for name, value in headers}
        try:
            answer = self._cluster(cluster).proxy(namespace, pod, model_server.PORT, method, path, sent, body, timeout)
        except kube.Unreachable as exc:
            raise forward.Unreachable(f"{address}: {exc}") from exc
        if _refused(answer):
            raise forward.Unreachable(f"{address}: the API server could not reach it")
        return forward.Response(answer.status, {k.lower().encode("latin-1"): v.encode("latin-1")
                                                for k, v in answer.headers.items()}, answer.body)

    async def request(self, address: str, method: str, path: str, headers: list[tuple[bytes, bytes]], body: bytes,
                      timeout: float, cluster: str | None = None) -> forward.Response:
        """As forward.Pool.request; with `cluster` (its compute's resource id), to the pod `address` (NAMESPACE/NAME)
        of that cluster."""
        if cluster is None:
            return await self.pool.request(address, method, path, headers, body, timeout)
        return await asyncio.wait_for(asyncio.to_thread(self._hop, cluster, address, method, path, headers, body,
                                                        timeout), timeout)
