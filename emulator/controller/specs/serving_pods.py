"""A model server as a pod on a real Kubernetes cluster: one instance of an online deployment on Kubernetes compute
whose kubeconfig the user supplied. Pure.

It is the model server of controller/specs/model_servers.py (the serving image, the inference server on 5001 behind
its deployment's key, the user's code and model read-only where Azure puts them, the unprivileged user), with the
instance type's nodeSelector, requests and limits. Its files travel as a job's pod's do (controller/specs/pods.py):
recorded as the one rank of an "attempt" that is the deployment's generation, so the api gives them to this pod's
token alone, and an init container of the emulator's image fetches them into the pod's emptyDir. Its log is its
stdout, which the controller reads through the API server. The controller probes it and the router reaches it
through the API server's pod proxy (runtime/kube.py)."""

import secrets
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import PurePosixPath

from emulator.controller.specs import pods
from emulator.controller.specs.model_servers import logs_dir
from emulator.dispatch.protocol import Attempt, Mount, job_tag
from emulator.domain.compute.kubernetes import InstanceType, KubernetesSpec
from emulator.domain.ids import WorkspaceRef
from emulator.domain.serving import model_server
from emulator.runtime import labels
from emulator.services import endpoints
from emulator.settings import Settings
from emulator.store.tables import OnlineDeployment

SERVER = "inference-server"  # the pod's container that serves
ROLE = "model-server"
# Label values are short names ([a-z0-9.-_], 63 at most): a deployment's key is not one, so a pod is labelled with
# its tag and carries the key itself, and the rest of what a model-server container's labels say, as annotations.


@dataclass(frozen=True)
class ServingPod:
    """A model-server pod to make: where, what, and the files' rank the controller records and claims for it."""
    kubeconfig_id: str  # the compute's resourceId (services/kubernetes.kubeconfig_path)
    namespace: str
    name: str
    manifest: dict
    files: Attempt

    @property
    def labels(self) -> dict[str, str]:
        return self.manifest["metadata"]["annotations"]


def selector(settings: Settings) -> str:
    """The label selector of this stack's model-server pods."""
    return f"app.kubernetes.io/managed-by={pods.MANAGED_BY},{labels.ROLE}={ROLE},{labels.STACK}={settings.stack}"


def serving_pod(settings: Settings, secret: bytes, row: OnlineDeployment, endpoint: str, ref: WorkspaceRef,
                found: endpoints.Assets, on: KubernetesSpec, chosen: InstanceType,
                files_for: Callable[[str], pods.PodFiles]) -> ServingPod:
    """`files_for`: how a pod of that name reaches the api (its token is its name's)."""
    props = row.body["properties"]
    name = f"amlemu-serve-{job_tag(row.key)[:12]}-{row.generation}-{secrets.token_hex(3)}"
    code, model = endpoints.code_dir(ref, found.code), endpoints.model_path(ref, found.model)
    app_root = f"{model_server.APP_ROOT}/{PurePosixPath(code).name or 'code'}"
    model_dir = model_server.model_dir(found.model.name, found.model.version)
    model_target = f"{model_dir}/{PurePosixPath(model).name}"
    logs = logs_dir(settings, endpoint, row.name).relative_to(settings.data_dir)
    # what it reads, as the scope of a one-rank attempt: the deployment's key and generation stand for a job's, and
    # the rank is the pod's own number
    rank = Attempt(job_key=row.key, job_name=row.name, attempt=row.generation, rank=secrets.randbelow(1 << 30),
                   world_size=1, image=row.image, command="", env={}, labels={}, container_name=name, cpus=None,
                   memory_bytes=None, gpus=0, network=None, user=settings.job_user, workdir=f"{logs}/{name}",
                   code_dir=code, log_file=f"{logs}/{name}.log", mounts=[Mount(model, model_target, read_only=True)])
    files = files_for(name)
    env = {**props["environmentVariables"], model_server.KEY_ENV: model_server.server_key(secret, row.key),
           "AZUREML_MODEL_DIR": model_dir, "AML_APP_ROOT": app_root,
           "AZUREML_ENTRY_SCRIPT": f"{app_root}/{props['codeConfiguration']['scoringScript']}",
           "HOME": "/tmp", "PYTHONUNBUFFERED": "1"}
    server = {"name": SERVER, "image": row.image, "command": [model_server.ENTRYPOINT], "env": pods.env_list(env),
              "workingDir": app_root, "ports": [{"name": "http", "containerPort": model_server.PORT}],
              "volumeMounts": [pods.data_mount(code, app_root, True), pods.data_mount(model, model_target, True)],
              "securityContext": pods.security(settings.job_user),
              "resources": {"requests": chosen.requests.to_kubernetes(), "limits": chosen.limits.to_kubernetes()}}
    annotations = {labels.ENDPOINT: endpoint, labels.DEPLOYMENT: row.name, labels.DEPLOYMENT_ID: row.key,
                   labels.WORKSPACE: ref.name, labels.GENERATION: str(row.generation)}
    manifest = {"apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": name, "namespace": on.namespace, "annotations": annotations,
                             "labels": {"app.kubernetes.io/managed-by": pods.MANAGED_BY, labels.ROLE: ROLE,
                                        labels.STACK: settings.stack, "amlemu.deployment": job_tag(row.key),
                                        labels.GENERATION: str(row.generation),
                                        "ml.azure.com/instance-type": chosen.name}},
                "spec": {"restartPolicy": "Never", "nodeSelector": dict(chosen.node_selector),
                         "automountServiceAccountToken": False, "volumes": [{"name": pods.VOLUME, "emptyDir": {}}],
                         "initContainers": [pods.helper(pods.FETCH, "pod-fetch-serving",
                                                        pods.helper_env(rank, name, files), files)],
                         "containers": [server]}}
    return ServingPod(on.resource_id, on.namespace, name, manifest, rank)

