"""A real Kubernetes cluster, through the official `kubernetes` client and the kubeconfig a user supplied: the few
calls Kubernetes compute needs (a namespace, and a job's pod: create, read, log, delete). No retries here: the
controller calls again on its next pass."""

from dataclasses import dataclass
from pathlib import Path

import urllib3
from kubernetes import client, config
from kubernetes.client.exceptions import ApiException

TIMEOUT = (5, 15)  # (connect, read) seconds: a cluster that does not answer must not hold up the controller


class Unreachable(Exception):
    """The API server could not be reached, or refused the emulator's credentials."""


@dataclass(frozen=True)
class PodState:
    phase: str  # Pending, Running, Succeeded, Failed, Unknown; "Gone" when there is no such pod
    exit_code: int | None = None
    reason: str | None = None


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
        if pod is None:
            return PodState("Gone")
        phase = (pod.status.phase if pod.status else None) or "Pending"
        for status in (pod.status.container_statuses or []) if pod.status else []:
            ended = status.state.terminated if status.state else None
            if ended is not None:
                return PodState(phase, ended.exit_code, ended.reason)
        return PodState(phase)

    def pod_log(self, namespace: str, name: str) -> str:
        return self._call(self.api.read_namespaced_pod_log, name, namespace, missing="") or ""

    def delete_pod(self, namespace: str, name: str) -> None:
        self._call(self.api.delete_namespaced_pod, name, namespace, missing=None)
