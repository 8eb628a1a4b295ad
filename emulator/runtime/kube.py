"""A real Kubernetes cluster, through the official `kubernetes` client and the kubeconfig a user supplied: the few
calls Kubernetes compute needs (a namespace; a job's or a model server's pod: create, read, list, log, delete; and
HTTP to a pod through the API server's proxy, as `kubectl get --raw .../pods/NAME:PORT/proxy/` does). No retries
here: the controller calls again on its next pass, the router tries the next instance."""

from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote

import urllib3
from kubernetes import client, config
from kubernetes.client.exceptions import ApiException

TIMEOUT = (5, 15)  # (connect, read) seconds: a cluster that does not answer must not hold up the controller


class Unreachable(Exception):
    """The API server could not be reached, or refused the emulator's credentials."""


@dataclass(frozen=True)
class Ended:
    """A container of the pod that has ended: its exit code, and the kubelet's reason (Completed, Error,
    OOMKilled...)."""
    exit_code: int
    reason: str | None = None


@dataclass(frozen=True)
class PodState:
    phase: str  # Pending, Running, Succeeded, Failed, Unknown; "Gone" when there is no such pod
    ended: dict[str, Ended] = field(default_factory=dict)  # its containers (init ones too) that ended, by name
    reason: str | None = None  # the pod's own, when it failed as a whole (DeadlineExceeded, Evicted)
    held: tuple[str, ...] = ()  # what holds it up: not scheduled, or a container that cannot start, and why
    ip: str | None = None  # status.podIP, once it has one
    running: tuple[str, ...] = ()  # its containers that run now


@dataclass(frozen=True)
class Listed:
    """A pod a label selector found: its own labels and annotations, and its state; `deleting` once a deletion
    was asked (it may still show while its grace period runs)."""
    name: str
    labels: dict[str, str]
    annotations: dict[str, str]
    deleting: bool
    state: PodState


@dataclass(frozen=True)
class Answer:
    """A pod's answer through the API server's proxy."""
    status: int
    headers: dict[str, str]
    body: bytes


STARTING = ("ContainerCreating", "PodInitializing")  # a container's waiting reasons on its way to run


def _held(status, seen) -> tuple[str, ...]:
    """Why the pod does not run yet, beyond starting: no node takes it (its nodeSelector, its requests), or a
    container cannot start (its image cannot be pulled, its configuration is wrong)."""
    found = [f"not scheduled: {c.message or c.reason}" for c in (status.conditions or []) if status is not None
             and c.type == "PodScheduled" and c.status == "False"]
    for one in seen:
        waiting = one.state.waiting if one.state is not None else None
        if waiting is not None and waiting.reason and waiting.reason not in STARTING:
            found.append(f"container {one.name} waits: {waiting.reason}" + (f" ({waiting.message})" if waiting.message else ""))
    return tuple(found)


def _state(pod) -> PodState:
    status = pod.status
    seen = [*(status.init_container_statuses or []), *(status.container_statuses or [])] if status else []
    ended = {s.name: Ended(s.state.terminated.exit_code, s.state.terminated.reason)
             for s in seen if s.state is not None and s.state.terminated is not None}
    running = tuple(s.name for s in seen if s.state is not None and s.state.running is not None)
    return PodState((status.phase if status else None) or "Pending", ended, status.reason if status else None,
                    _held(status, seen), (status.pod_ip if status else None) or None, running)


class Cluster:
    def __init__(self, kubeconfig: Path):
        try:
            self.api = client.CoreV1Api(config.new_client_from_config(str(kubeconfig), persist_config=False))
        except (config.ConfigException, OSError, ValueError, TypeError) as exc:
            raise Unreachable(f"the kubeconfig cannot be used: {exc}") from exc

    def _call(self, method, *args, missing=None, **kwargs):
        """The call's answer; `missing` when the API server says 404."""
        try:
            return method(*args, _request_timeout=TIMEOUT, **kwargs)
        except ApiException as exc:
            if exc.status == 404:
                return missing
            raise Unreachable(f"the API server answered {exc.status} {exc.reason}") from exc
        except (urllib3.exceptions.HTTPError, OSError) as exc:
            raise Unreachable(str(exc)) from exc

    def namespace_exists(self, namespace: str) -> bool:
        return self._call(self.api.read_namespace, namespace) is not None

    def create_pod(self, namespace: str, manifest: dict) -> None:
        """Create the pod; one of that name already there (an earlier pass's) is left as it is."""
        try:
            self.api.create_namespaced_pod(namespace, manifest, _request_timeout=TIMEOUT)
        except ApiException as exc:
            if exc.status != 409:
                raise Unreachable(f"the API server refused the pod: {exc.status} {exc.reason} {exc.body}") from exc
        except (urllib3.exceptions.HTTPError, OSError) as exc:
            raise Unreachable(str(exc)) from exc

    def pod_state(self, namespace: str, name: str) -> PodState:
        pod = self._call(self.api.read_namespaced_pod, name, namespace)
        return PodState("Gone") if pod is None else _state(pod)

    def pods(self, namespace: str, selector: str) -> list[Listed]:
        """The namespace's pods that `selector` (a label selector: `a=b,c=d`) matches."""
        found = self._call(self.api.list_namespaced_pod, namespace, label_selector=selector)
        return [Listed(p.metadata.name, dict(p.metadata.labels or {}), dict(p.metadata.annotations or {}),
                       p.metadata.deletion_timestamp is not None, _state(p)) for p in (found.items if found else [])]

    def pod_log(self, namespace: str, name: str, container: str, tail_lines: int | None = None) -> str:
        return self._call(self.api.read_namespaced_pod_log, name, namespace, container=container, missing="",
                          **({"tail_lines": tail_lines} if tail_lines else {})) or ""

    def proxy(self, namespace: str, pod: str, port: int, method: str, path: str, headers: dict[str, str],
              body: bytes = b"", timeout: float = 60.0) -> Answer:
        """HTTP to the pod's `port` through the API server (`/api/v1/namespaces/NS/pods/NAME:PORT/proxy/PATH`): it
        reaches pods where the emulator cannot (their network is the cluster's). The client's own serialiser would
        turn the body into JSON, so only the URL and credentials come from it, and the request goes raw on its
        connection pool (its TLS settings). A 503 is the API server's when the pod does not answer."""
        client_ = self.api.api_client
        _m, url, auth, _b, _p = client_.param_serialize(
            method, "/api/v1/namespaces/{namespace}/pods/{name}/proxy/",
            path_params={"namespace": namespace, "name": f"{pod}:{port}"}, auth_settings=["BearerToken"])
        try:
            answer = client_.rest_client.pool_manager.request(
                method, url + quote(path.lstrip("/"), safe="/?=&"), body=body or None, headers={**auth, **headers}, preload_content=True,
                timeout=urllib3.Timeout(connect=TIMEOUT[0], read=timeout), retries=False)
        except (urllib3.exceptions.HTTPError, OSError) as exc:
            raise Unreachable(str(exc)) from exc
        return Answer(answer.status, dict(answer.headers), answer.data)

    def delete_pod(self, namespace: str, name: str) -> None:
        self._call(self.api.delete_namespaced_pod, name, namespace, missing=None)
