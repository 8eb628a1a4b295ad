"""Model servers as pods on the Kubernetes clusters that users' kubeconfigs reach (controller/specs/serving_pods.py
makes them): what the endpoint reconciler asks of its model-server containers (list, start, remove, probe, log), asked
of the API servers, beside the local runtime, which keeps every other model server.

A pod is seen as a container: its id is `pod:NAMESPACE/NAME`, its labels are its annotations (a deployment's key is
no label value), it runs until it has ended (a pod on its way, scheduled or pulling, counts as starting: it has no
address yet, so it is neither probed nor published), and its address is its IP once its server runs. The API server
is the only way in: the probes go through its pod proxy, as the router's requests do (scoring/pod_hops.py)."""

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import redis

from emulator import confined, tokens
from emulator.controller.effects import Effects
from emulator.controller.specs import pods
from emulator.controller.specs.model_servers import logs_dir
from emulator.controller.specs.serving_pods import SERVER, ServingPod, selector
from emulator.dispatch import protocol, rank_files
from emulator.domain.compute.kubernetes import KubernetesSpec
from emulator.domain.ids import WorkspaceRef
from emulator.domain.serving import model_server
from emulator.errors import EmulatorError
from emulator.runtime import kube, labels
from emulator.runtime.base import Containers, Observed
from emulator.services import kubernetes
from emulator.settings import Settings
from emulator.store.repositories import Repository
from emulator.store.tables import OnlineDeployment, OnlineEndpoint

log = logging.getLogger("amlemu.controller")
POD_ID = "pod:"
LOG_SECONDS = 2.0  # how often a pod's log is read again into the deployment's log folder
LOG_LINES = 5000  # the most getLogs gives by default


@dataclass(frozen=True)
class Place:
    resource_id: str  # the compute's cluster, whose kubeconfig reaches it
    namespace: str
    name: str


def _observed(pod_id: str, pod: kube.Listed) -> Observed:
    state = pod.state
    ended = state.ended.get(SERVER) or next((e for n, e in state.ended.items() if e.exit_code != 0), None)
    if ended is None and state.phase in ("Failed", "Succeeded", "Unknown"):
        ended = kube.Ended(1, state.reason)  # evicted, past its deadline, its node lost
    return Observed(id=pod_id, name=pod.name, labels={**pod.labels, **pod.annotations}, running=ended is None,
                    exit_code=ended.exit_code if ended else None, oom_killed=bool(ended and ended.reason == "OOMKilled"),
                    ip=state.ip if SERVER in state.running else None)


def cluster_of(settings: Settings, repo: Repository, row: OnlineDeployment,
               parent: OnlineEndpoint) -> KubernetesSpec | None:
    """The Kubernetes compute a deployment's pods run on, when a kubeconfig reaches its cluster."""
    spec = kubernetes.endpoint_spec(repo, WorkspaceRef.from_key(row.endpoint_key).key, parent.body)
    return spec if spec and kubernetes.kubeconfig_for(settings.data_dir, spec.resource_id) else None


def targets(settings: Settings, repo: Repository, deployed: list[OnlineDeployment]) \
        -> tuple[dict[str, tuple[str, str]], set[tuple[str, str]]]:
    """Where each deployment on a Kubernetes cluster that a kubeconfig reaches runs, (resource id, namespace); and
    every such place of the attached Kubernetes computes (a deleted deployment's pods are found there too)."""
    everywhere = set()
    for compute in repo.computes():
        if compute.compute_type == "Kubernetes":
            spec = kubernetes.spec_of(compute)
            if kubernetes.kubeconfig_for(settings.data_dir, spec.resource_id):
                everywhere.add((spec.resource_id, spec.namespace))
    found = {}
    for row in deployed:
        parent = repo.online_endpoint(row.endpoint_key)
        try:
            spec = parent and cluster_of(settings, repo, row, parent)
        except EmulatorError:  # its compute was detached: its reconcile says so
            continue
        if spec:
            found[row.key] = (spec.resource_id, spec.namespace)
    return found, everywhere


class PodServers:
    def __init__(self, settings: Settings, broker: redis.Redis | None, secret: bytes, local: Containers,
                 connect: Callable[[Path], kube.Cluster] = kube.Cluster, clock: Callable[[], float] = time.monotonic):
        """`local`: the runtime of every model server that is no pod."""
        self.settings, self.broker, self.secret, self.local = settings, broker, secret, local
        self.connect, self.clock = connect, clock
        self.where: dict[str, Place] = {}  # the pods seen last, by id
        self.held: dict[str, tuple[str, ...]] = {}  # what holds each up, as its log says
        self.logs_read: dict[str, float] = {}

    def cluster(self, resource_id: str) -> kube.Cluster:
        config = kubernetes.kubeconfig_for(self.settings.data_dir, resource_id)
        if config is None:
            raise kube.Unreachable(f"no kubeconfig for {resource_id} any more "
                                   f"({kubernetes.kubeconfig_path(self.settings.data_dir, resource_id)})")
        return self.connect(config)

    def observe(self, targets: set[tuple[str, str]]) -> tuple[list[Observed], set[tuple[str, str]]]:
        """This stack's model-server pods in each (cluster resource id, namespace), and the targets whose API server
        did not answer (what runs there is unknown: it is neither replaced nor swept this pass)."""
        found, missed, where, held = [], set(), {}, {}
        for resource_id, namespace in sorted(targets):
            try:
                listed = self.cluster(resource_id).pods(namespace, selector(self.settings))
            except kube.Unreachable as exc:
                log.warning("model-server pods in %s of %s: %s", namespace, resource_id, exc)
                missed.add((resource_id, namespace))
                continue
            for pod in listed:
                if not pod.deleting:
                    pod_id = f"{POD_ID}{namespace}/{pod.name}"
                    where[pod_id], held[pod.name] = Place(resource_id, namespace, pod.name), pod.state.held
                    found.append(_observed(pod_id, pod))
        self.where, self.held = where, held
        self.logs_read = {name: at for name, at in self.logs_read.items() if name in held}
        return found, missed

    def owns(self, container_id: str) -> bool:
        return container_id.startswith(POD_ID)

    def files(self, pod: str) -> pods.PodFiles:
        return pods.PodFiles(self.settings.node_image, self.settings.node_api_url,
                             tokens.node_token(self.secret, pod), (self.settings.ca_dir / "ca.crt").read_text())

    def start(self, pod: ServingPod) -> None:
        """Its files' rank recorded and claimed for it (what the api checks before it gives them), then the pod."""
        cluster = self.cluster(pod.kubeconfig_id)
        try:
            protocol.set_current(self.broker, pod.files.job_key, pod.files.attempt)
            rank_files.record(self.broker, pod.files)
            if not rank_files.claim_for_pod(self.broker, pod.files, pod.name):
                raise kube.Unreachable(f"its files' rank is another's: pod {pod.name} is not made")
        except redis.RedisError as exc:
            raise kube.Unreachable(f"the dispatch broker cannot be reached: {exc}") from exc
        cluster.create_pod(pod.namespace, pod.manifest)

    def remove_pods(self, effects: Effects) -> None:
        """The pods among the containers to remove go now, through their API servers; the rest is the actuator's."""
        for pod_id in [i for i in effects.remove if self.owns(i)]:
            effects.remove.remove(pod_id)
            self.remove(pod_id)

    def remove(self, container_id: str) -> None:
        place = self.where.get(container_id)
        if place is None:
            if not self.owns(container_id):
                self.local.remove(container_id)
            return
        try:
            self.cluster(place.resource_id).delete_pod(place.namespace, place.name)
        except kube.Unreachable as exc:  # the next pass finds it again
            log.warning("could not delete model-server pod %s: %s", place.name, exc)

    def healthy(self, container_id: str, timeout: float, headers: dict[str, str]) -> bool:
        """The inference server's health route (GET / on 5001) through the API server's pod proxy."""
        place = self.where.get(container_id)
        if place is None:
            return False
        try:
            answer = self.cluster(place.resource_id).proxy(place.namespace, place.name, model_server.PORT, "GET", "/",
                                                           headers, timeout=timeout)
        except kube.Unreachable:
            return False
        return answer.status == 200

    def address(self, container: Observed) -> dict:
        """Where the router reaches an instance: a container's address on the scoring network, or a pod's cluster,
        namespace and name (scoring/pod_hops.py)."""
        place = self.where.get(container.id)
        if place is None:
            return {"address": f"{container.ip}:{model_server.PORT}"}
        return {"address": f"{place.namespace}/{place.name}", "cluster": place.resource_id}

    def read_logs(self, containers: list[Observed]) -> None:
        """Each pod's server log (and what holds it up, or what its file fetch said when it failed) into its
        deployment's log folder, where getLogs and a failed deployment's error read it; every LOG_SECONDS."""
        now = self.clock()
        for container in containers:
            place = self.where.get(container.id)
            if place is None or now - self.logs_read.get(place.name, -LOG_SECONDS) < LOG_SECONDS:
                continue
            folder = logs_dir(self.settings, container.labels[labels.ENDPOINT], container.labels[labels.DEPLOYMENT])
            self.logs_read[place.name] = now
            try:
                cluster = self.cluster(place.resource_id)
                text = cluster.pod_log(place.namespace, place.name, SERVER, tail_lines=LOG_LINES)
                if not container.running and not text:
                    text = cluster.pod_log(place.namespace, place.name, pods.FETCH)
            except kube.Unreachable as exc:
                log.warning("could not read the log of model-server pod %s: %s", place.name, exc)
                continue
            notes = "".join(f"amlemu: pod {place.namespace}/{place.name} {line}\n"
                            for line in self.held.get(place.name, ()))
            rel = (folder / f"{place.name}.log").relative_to(self.settings.data_dir)
            confined.remove(self.settings.data_dir, rel)
            with confined.appending(self.settings.data_dir, rel, mode=0o644) as out:
                out.write(notes + text)
