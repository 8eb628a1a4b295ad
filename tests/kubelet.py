"""A stand-in kubelet: it runs the pods posted to a stand-in API server (tests/kube_api.py) as Docker containers on
this machine, so the emulator's pods can be tested end to end where no real kubelet can run (README, "Kubernetes
compute"). It does what a kubelet does with a `restartPolicy: Never` pod: emptyDir volumes (host folders, bind
mounted), the init containers one after another, then the main ones together, the limits, the user, `$(VAR)` in
command and args; it reports the pod's status in the shape of core/v1 PodStatus (a running container is ready, the
pod Ready when all its main ones are), serves each container's log through the API server, kills and removes the
containers of a deleted pod, and fails a pod past `activeDeadlineSeconds`.

Not a kubelet's: one network namespace per container (a pod's containers do not share localhost): each container
has its own IP on the kubelet's `network`, and the pod's (status.podIP, what the API server's proxy dials) is its
first main container's, from when that one runs; no restarts, no probes, no pulls (an image that is not here leaves
its container waiting with ErrImageNeverPull, as a real kubelet does with `imagePullPolicy: Never`), volumes other
than emptyDir and hostPath.
"""

import re
import shutil
import tempfile
import threading
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path

import docker
from docker.errors import APIError, ImageNotFound, NotFound
from docker.types import Mount
from kubernetes.utils import parse_quantity

from tests.cleanup import remove_containers
from tests.kube_api import FakeKubeApi

POLL = 0.2  # seconds between two looks at the api's pods, and at a pod's containers
VARIABLE = re.compile(r"\$\$|\$\(([A-Za-z_][A-Za-z0-9_.-]*)\)")  # `$$` escapes, `$(NAME)` expands if NAME is set


def now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def k8s_time(docker_time: str) -> str:
    """Docker's RFC 3339 with nanoseconds as the API server writes it: to the second."""
    return docker_time[:19] + "Z"


def expand(text: str, env: dict[str, str]) -> str:
    return VARIABLE.sub(lambda m: "$" if m[0] == "$$" else env.get(m[1], m[0]), text)


def terminated(container) -> bool:
    return container is not None and container.attrs["State"]["Status"] in ("exited", "dead")


def exit_code(container) -> int | None:
    return container.attrs["State"]["ExitCode"] if terminated(container) else None


class PodRun:
    """One pod on this node, in a thread of its own: started by the kubelet, stopped when the pod is deleted."""

    def __init__(self, kubelet: "StandInKubelet", namespace: str, name: str, sent: dict):
        self.kubelet, self.namespace, self.name, self.sent, self.spec = kubelet, namespace, name, sent, sent["spec"]
        self.containers: dict[str, object] = {}  # container name -> docker Container, once created
        self.waiting: dict[str, dict] = {}  # container name -> a waiting state other than the usual
        self.volumes: dict[str, Path] = {}
        self.failure: tuple[str, str] | None = None  # the pod's (reason, message) when the kubelet failed it
        self.killed = False  # the kubelet killed its containers (past the deadline, or deleted): no 137 is an OOM
        self.ip: str | None = None  # its first main container's, kept once seen (Docker forgets a stopped one's)
        self.started, self.start_time = time.monotonic(), now()
        self.transitions: dict[str, tuple[str, str]] = {}  # condition type -> (status, since)
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self.run, name=f"kubelet-{name}", daemon=True)

    def run(self) -> None:
        try:
            self.volumes = {v["name"]: self.kubelet.volume(v) for v in self.spec.get("volumes", [])}
            if all(self.run_together([init]) for init in self.spec.get("initContainers", [])):
                self.run_together(self.spec["containers"])
        except Exception as exc:  # noqa: BLE001 - the stand-in's fault or Docker's: said in the pod, not a hang
            self.failure = ("KubeletError", f"{type(exc).__name__}: {exc}")
            self.report()

    def run_together(self, specs: list[dict]) -> bool:
        """Start these containers and wait for all of them to end: whether the pod goes on (all exited 0)."""
        for spec in specs:
            if not self.stopped.is_set():
                self.create(spec)
        while True:
            for container in self.containers.values():
                container.reload()
            ran = [self.containers.get(spec["name"]) for spec in specs]
            self.report()
            if all(terminated(c) for c in ran):
                return all(exit_code(c) == 0 for c in ran)
            deadline = self.spec.get("activeDeadlineSeconds")
            if deadline is not None and time.monotonic() - self.started > deadline:
                self.failure = ("DeadlineExceeded", "Pod was active on the node longer than the specified deadline")
                self.kill()
                self.report()
                return False
            if self.stopped.wait(POLL):
                return False

    def kill(self) -> None:
        self.killed = True
        for container in self.containers.values():
            try:
                container.kill()
            except APIError:  # 409: it has just ended
                pass
            container.wait()
            container.reload()

    def create(self, spec: dict) -> None:
        try:
            container = self.kubelet.docker.containers.create(**self.kubelet.container_args(self, spec))
        except ImageNotFound:
            self.waiting[spec["name"]] = {"reason": "ErrImageNeverPull", "message": f'Container image '
                                          f'"{spec["image"]}" is not present with pull policy of Never'}
            return
        self.containers[spec["name"]] = container
        container.start()
        self.kubelet.api.report(self.namespace, self.name, self.sent, container=spec["name"],
                                log=lambda: self.kubelet.logs_of(container))

    def report(self) -> None:
        self.kubelet.api.report(self.namespace, self.name, self.sent, status=self.status())

    def status(self) -> dict:
        inits, mains = self.spec.get("initContainers", []), self.spec["containers"]
        initialized = all(exit_code(self.containers.get(c["name"])) == 0 for c in inits)
        pending_reason = "ContainerCreating" if initialized else "PodInitializing"
        init_statuses = [self.container_status(c, "PodInitializing") for c in inits]
        statuses = [self.container_status(c, pending_reason) for c in mains]
        phase = self.phase(init_statuses, statuses)
        ready = all(s["ready"] for s in statuses)
        status = {"phase": phase, "startTime": self.start_time, "qosClass": qos_class(inits + mains),
                  "hostIP": "127.0.0.1", "containerStatuses": statuses,
                  "conditions": [self.condition("PodScheduled", True),
                                 self.condition("Initialized", initialized, "ContainersNotInitialized"),
                                 self.condition("ContainersReady", ready, _unready(phase)),
                                 self.condition("Ready", ready, _unready(phase))]}
        if inits:
            status["initContainerStatuses"] = init_statuses
        if ip := self.pod_ip(mains[0]["name"]):
            status["podIP"], status["podIPs"] = ip, [{"ip": ip}]
        if self.failure:
            status["reason"], status["message"] = self.failure
        return status

    def pod_ip(self, first: str) -> str | None:
        """The first main container's address on the kubelet's network once it runs, and after (a real pod keeps it)."""
        container = self.containers.get(first)
        if self.ip is None and container is not None and container.attrs["State"]["Status"] == "running":
            networks = container.attrs["NetworkSettings"]["Networks"]
            self.ip = (networks.get(self.kubelet.network or "bridge") or {}).get("IPAddress") or None
        return self.ip

    def phase(self, init_statuses: list[dict], statuses: list[dict]) -> str:
        ended = [s["state"]["terminated"]["exitCode"] for s in statuses if "terminated" in s["state"]]
        if self.failure or any(s["state"].get("terminated", {}).get("exitCode") for s in init_statuses):
            return "Failed"
        if len(ended) == len(statuses):
            return "Succeeded" if set(ended) == {0} else "Failed"
        return "Running" if all(s["started"] or "terminated" in s["state"] for s in statuses) else "Pending"

    def condition(self, kind: str, true: bool, reason: str | None = None) -> dict:
        value = "True" if true else "False"
        if self.transitions.get(kind, (None,))[0] != value:
            self.transitions[kind] = (value, now())
        made = {"type": kind, "status": value, "lastProbeTime": None, "lastTransitionTime": self.transitions[kind][1]}
        return made if true else {**made, "reason": reason}

    def container_status(self, spec: dict, pending_reason: str) -> dict:
        status = {"name": spec["name"], "image": spec["image"], "imageID": "", "lastState": {}, "ready": False,
                  "restartCount": 0, "started": False}
        container = self.containers.get(spec["name"])
        if container is None:
            return {**status, "state": {"waiting": self.waiting.get(spec["name"], {"reason": pending_reason})}}
        state, cid = container.attrs["State"], f"docker://{container.id}"
        status.update(imageID=f"docker://{container.attrs['Image']}", containerID=cid)
        if state["Status"] == "created":
            return {**status, "state": {"waiting": {"reason": "ContainerCreating"}}}
        if not terminated(container):
            return {**status, "ready": True, "started": True,
                    "state": {"running": {"startedAt": k8s_time(state["StartedAt"])}}}
        code = state["ExitCode"]
        # Docker 20.10's OOMKilled flag on cgroup v2 can miss an OOM kill that came just before the exit (moby's
        # OOM event racing its exit event, seen on a loaded machine): a SIGKILL under a memory limit that the
        # kubelet did not send is the kernel's OOM killer, as emulator/workers/job_runner.py reads it too.
        oom = state["OOMKilled"] or (code == 137 and bool(container.attrs["HostConfig"].get("Memory"))
                                     and not self.killed)
        reason = "OOMKilled" if oom else "Completed" if code == 0 else "Error"
        return {**status, "state": {"terminated": {
            "exitCode": code, "reason": reason, "startedAt": k8s_time(state["StartedAt"]),
            "finishedAt": k8s_time(state["FinishedAt"]), "containerID": cid}}}


def _unready(phase: str) -> str:
    return "PodCompleted" if phase in ("Succeeded", "Failed") else "ContainersNotReady"


def qos_class(containers: list[dict]) -> str:
    """Guaranteed when every container's cpu and memory requests equal its limits (requests default to limits),
    BestEffort when none asks for anything, else Burstable."""
    def guaranteed(resources: dict) -> bool:
        limits, requests = resources.get("limits") or {}, resources.get("requests") or {}
        return {"cpu", "memory"} <= set(limits) and all(
            parse_quantity(requests[key]) == parse_quantity(limits[key]) for key in ("cpu", "memory") if key in requests)

    resources = [c.get("resources") or {} for c in containers]
    if not any(r.get("requests") or r.get("limits") for r in resources):
        return "BestEffort"
    return "Guaranteed" if all(guaranteed(r) for r in resources) else "Burstable"


class StandInKubelet:
    """The node of a FakeKubeApi: every pod posted there runs here, until it is deleted or the kubelet closed."""

    def __init__(self, api: FakeKubeApi, network: str | None = None, label: dict[str, str] | None = None,
                 images: dict[str, str] | None = None):
        """`images`: what the cluster's registry gives for a name, where it is another local image (no pulls)."""
        self.api, self.network, self.docker = api, network, docker.from_env(timeout=120)
        self.images = images or {}
        self.id = uuid.uuid4().hex[:10]
        self.labels = {"amlemu.kubelet": self.id, **(label or {})}  # all it makes carries them
        self.runs: dict[tuple[str, str], PodRun] = {}
        self.folders: list[Path] = []
        self.closing = threading.Event()
        self.thread = threading.Thread(target=self.loop, name="kubelet", daemon=True)

    def start(self) -> None:
        self.thread.start()

    def close(self) -> None:
        self.closing.set()
        if self.thread.is_alive():
            self.thread.join()
        for run in self.runs.values():
            self.stop(run)
        remove_containers(self.docker, {"label": [f"{k}={v}" for k, v in self.labels.items()]})
        for folder in self.folders:  # a pod's that failed before its run knew them too
            shutil.rmtree(folder, ignore_errors=True)
        self.docker.close()

    def loop(self) -> None:
        while not self.closing.wait(POLL):
            self.sync()

    def sync(self) -> None:
        posted = self.api.posted()
        for key, run in list(self.runs.items()):
            if posted.get(key) is not run.sent:  # deleted (or deleted and posted again)
                self.stop(self.runs.pop(key))
        for (namespace, name), sent in posted.items():
            if (namespace, name) not in self.runs:
                self.runs[namespace, name] = run = PodRun(self, namespace, name, sent)
                run.thread.start()

    def stop(self, run: PodRun) -> None:
        """What a kubelet does with a deleted pod: its containers killed and removed, its emptyDirs gone."""
        run.stopped.set()
        run.thread.join()
        for container in run.containers.values():
            try:
                container.remove(force=True)
            except NotFound:
                pass
        for folder in run.volumes.values():
            if folder in self.folders:  # not a hostPath
                shutil.rmtree(folder, ignore_errors=True)

    def volume(self, volume: dict) -> Path:
        if "hostPath" in volume:
            return Path(volume["hostPath"]["path"])
        if "emptyDir" not in volume:
            raise NotImplementedError(f"volume {volume['name']}: only emptyDir and hostPath")
        folder = Path(tempfile.mkdtemp(prefix="kubelet-empty-dir-"))
        folder.chmod(0o777)  # writable by a container's user, whoever it is
        self.folders.append(folder)
        return folder

    def logs_of(self, container) -> str:
        try:
            return container.logs().decode(errors="replace")
        except NotFound:  # removed at close
            return ""

    def container_args(self, run: PodRun, spec: dict) -> dict:
        """containers.create's arguments for a container of the pod, as dockershim made them."""
        env: dict[str, str] = {}
        for variable in spec.get("env", []):  # each may name those before it
            env[variable["name"]] = expand(variable.get("value", ""), env)
        security = {**(run.spec.get("securityContext") or {}), **(spec.get("securityContext") or {})}
        ids = [str(security[key]) for key in ("runAsUser", "runAsGroup") if key in security]
        limits = (spec.get("resources") or {}).get("limits") or {}
        args = {"image": self.images.get(spec["image"], spec["image"]),
                "name": f"k8s_{spec['name']}_{run.name}_{run.namespace}_{self.id}_0",
                "entrypoint": [expand(a, env) for a in spec["command"]] if spec.get("command") else None,
                "command": [expand(a, env) for a in spec["args"]] if spec.get("args") else None,
                "environment": env, "working_dir": spec.get("workingDir"), "network": self.network,
                "hostname": run.name,  # a pod's hostname is its name
                "user": ":".join(ids) if "runAsUser" in security else None,
                "group_add": [str(security["fsGroup"])] if "fsGroup" in security else None,
                "mounts": [self.mount(run, m) for m in spec.get("volumeMounts", [])],
                "labels": {**self.labels, "io.kubernetes.pod.namespace": run.namespace,
                           "io.kubernetes.pod.name": run.name, "io.kubernetes.container.name": spec["name"]}}
        if "cpu" in limits:
            args["nano_cpus"] = int(parse_quantity(limits["cpu"]) * 10**9)
        if "memory" in limits:  # and no swap beyond it, so that a container over it is OOMKilled
            args["mem_limit"] = args["memswap_limit"] = int(parse_quantity(limits["memory"]))
        return args

    def mount(self, run: PodRun, mount: dict) -> Mount:
        source = run.volumes[mount["name"]]
        if mount.get("subPath"):
            source = source / mount["subPath"]
            if not source.exists():  # as the kubelet does: a missing subPath is made a directory
                source.mkdir(parents=True, mode=0o777)
                source.chmod(0o777)
        return Mount(mount["mountPath"], str(source), type="bind", read_only=bool(mount.get("readOnly")))
