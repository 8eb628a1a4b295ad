"""A job's pod on a real Kubernetes cluster (Kubernetes compute with a kubeconfig). Pure.

The job's container is its rank as on any node (controller/specs/job_ranks.py: command, environment, the folders
Azure gives it, its unprivileged user), with the instance type's nodeSelector, requests and limits. Its files travel
as a detached node's do (workers/pod_files.py), in two containers of the emulator's own image beside it, sharing an
emptyDir: the init container fetches the code snapshot and inputs from the api, and the job container mounts each
part where Azure puts it (subPath); the other sends the log as it grows and the outputs every few seconds, and the
rest once the job's shell has written its exit status. The pod carries its own token for that, in those two
containers only.

The cluster must pull both images (the environment's, the emulator's) and reach the api at Settings.node_api_url
(README, "Kubernetes compute")."""

import json
from dataclasses import dataclass

from emulator.dispatch import rank_files
from emulator.dispatch.job_container import EXIT, LOG, WORKDIR, capture
from emulator.dispatch.protocol import Attempt, job_tag
from emulator.domain.compute.kubernetes import InstanceType

MANAGED_BY = "amlemu"
JOB, FETCH, FOLLOW = "job", "amlemu-fetch", "amlemu-follow"  # the pod's containers
VOLUME = "amlemu"
HELPER_RESOURCES = {"requests": {"cpu": "50m", "memory": "64Mi"}, "limits": {"memory": "512Mi"}}


@dataclass(frozen=True)
class PodFiles:
    """How the pod's own containers reach the api: the emulator's image, the api's address for nodes, the pod's
    token (tokens.node_token of its name) and the CA the api's certificate is issued by."""
    image: str
    api_url: str
    token: str
    ca_pem: str


def pod_name(job_key: str, attempt: int) -> str:
    return f"amlemu-job-{job_tag(job_key)}-{attempt}"


def _literal(text: str) -> str:
    """`text` as the kubelet passes it on: it expands `$(NAME)` in a command and an env value, and `$$` is its `$`
    (a shell's `$(date)` or `$$` must reach the shell as written)."""
    return text.replace("$", "$$")


def env_list(env: dict[str, str]) -> list[dict]:
    return [{"name": name, "value": _literal(value)} for name, value in env.items()]


def _data(rel: str) -> str:
    """Where the emptyDir holds a file of the data folder (the subPath the job container mounts)."""
    return f"{rank_files.POD_DATA}/{rel}"


def security(user: str | None) -> dict:
    """The job's (or model server's) unprivileged user and group, and no way to more (as a node's job container)."""
    context: dict = {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}}
    uid, _, gid = (user or "").partition(":")
    if uid.isdigit():
        context.update(runAsUser=int(uid), runAsNonRoot=int(uid) != 0)
    if gid.isdigit():
        context["runAsGroup"] = int(gid)
    return context


def _job(attempt: Attempt, chosen: InstanceType) -> dict:
    mounts = [{"name": VOLUME, "mountPath": WORKDIR, "subPath": _data(attempt.workdir)},
              {"name": VOLUME, "mountPath": LOG, "subPath": _data(attempt.log_file)},
              *(data_mount(m.source, m.target, m.read_only) for m in attempt.mounts)]
    return {"name": JOB, "image": attempt.image,
            "command": ["/bin/sh", "-c", _literal(f"{capture(f'{WORKDIR}/{EXIT}')}; {attempt.command}")],
            "env": env_list(attempt.env), "workingDir": WORKDIR,
            "volumeMounts": mounts, "securityContext": security(attempt.user),
            "resources": {"requests": chosen.requests.to_kubernetes(), "limits": chosen.limits.to_kubernetes()}}


def helper(name: str, step: str, env: list[dict], files: PodFiles) -> dict:
    return {"name": name, "image": files.image, "command": ["python", "-m", "emulator", step], "env": env,
            "volumeMounts": [{"name": VOLUME, "mountPath": rank_files.POD_ROOT}], "resources": HELPER_RESOURCES}


def helper_env(attempt: Attempt, pod: str, files: PodFiles) -> list[dict]:
    """What the pod's own containers are told: the api, the pod's token and name, the files' rank."""
    return env_list({rank_files.API_URL: files.api_url, rank_files.TOKEN: files.token, rank_files.CA: files.ca_pem,
                     rank_files.POD_NAME: pod, rank_files.POD_ATTEMPT: json.dumps(attempt.to_message())})


def data_mount(rel: str, target: str, read_only: bool) -> dict:
    """A file or folder of the emptyDir's copy of the data folder, where the container sees it."""
    return {"name": VOLUME, "mountPath": target, "subPath": _data(rel), "readOnly": read_only}


def manifest(attempt: Attempt, namespace: str, chosen: InstanceType, files: PodFiles,
             timeout_seconds: float | None = None) -> dict:
    """The pod, as the API server takes it (core/v1 Pod)."""
    name = pod_name(attempt.job_key, attempt.attempt)
    env = helper_env(attempt, name, files)
    spec = {"restartPolicy": "Never", "nodeSelector": dict(chosen.node_selector), "automountServiceAccountToken": False,
            "volumes": [{"name": VOLUME, "emptyDir": {}}],
            "initContainers": [helper(FETCH, "pod-fetch", env, files)],
            "containers": [_job(attempt, chosen), helper(FOLLOW, "pod-follow", env, files)]}
    if timeout_seconds:
        spec["activeDeadlineSeconds"] = int(timeout_seconds)
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": namespace,
                         "labels": {"app.kubernetes.io/managed-by": MANAGED_BY, "amlemu.job": job_tag(attempt.job_key),
                                    "amlemu.attempt": str(attempt.attempt), "ml.azure.com/instance-type": chosen.name}},
            "spec": spec}
