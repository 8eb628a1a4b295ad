"""A job's pod on a real Kubernetes cluster (Kubernetes compute with a kubeconfig): the instance type's nodeSelector,
requests and limits, the job's image and command, in the compute's namespace. Pure.

What a pod cannot have from here: the emulator's folders. The code snapshot, inputs and outputs stay on the
emulator's machine (Azure's extension mounts them from the workspace's storage, which the emulator's blob store is
not reachable as from a remote cluster): the command runs in the image as it is, and its log is read back."""

from emulator.dispatch.protocol import job_tag
from emulator.domain.compute.kubernetes import InstanceType
from emulator.domain.jobs import command_job, placeholders

MANAGED_BY = "amlemu"
OUTPUTS = "/tmp/outputs"


def pod_name(job_key: str, attempt: int) -> str:
    return f"amlemu-job-{job_tag(job_key)}-{attempt}"


def _inputs(props: dict) -> dict[str, str]:
    """Literal inputs by value, the others by their URI (no mount reaches the pod)."""
    return {name: str(entry.get("value") if entry.get("jobInputType") == "literal" else entry.get("uri"))
            for name, entry in (props.get("inputs") or {}).items()}


def manifest(job_key: str, job_name: str, attempt: int, props: dict, namespace: str, chosen: InstanceType,
             image: str) -> dict:
    """The pod, as the API server takes it (core/v1 Pod)."""
    spec = command_job.spec_of(props)
    inputs = _inputs(props)
    outputs = {name: f"{OUTPUTS}/{name}" for name in props.get("outputs") or {}}  # kept in the pod only
    command = placeholders.resolve(spec.command, {"inputs": inputs, "outputs": outputs})
    env = {**spec.environment_variables, **{f"AZURE_ML_INPUT_{k}": v for k, v in inputs.items()},
           **{f"AZURE_ML_OUTPUT_{k}": v for k, v in outputs.items()},
           "AZUREML_RUN_ID": job_name, "PYTHONUNBUFFERED": "1"}
    container = {"name": "job", "image": image, "command": ["/bin/sh", "-c", command],
                 "env": [{"name": k, "value": v} for k, v in env.items()],
                 "resources": {"requests": chosen.requests.to_kubernetes(), "limits": chosen.limits.to_kubernetes()}}
    pod_spec = {"restartPolicy": "Never", "nodeSelector": dict(chosen.node_selector), "containers": [container]}
    if spec.timeout_seconds:
        pod_spec["activeDeadlineSeconds"] = int(spec.timeout_seconds)
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": pod_name(job_key, attempt), "namespace": namespace,
                         "labels": {"app.kubernetes.io/managed-by": MANAGED_BY, "amlemu.job": job_tag(job_key),
                                    "amlemu.attempt": str(attempt), "ml.azure.com/instance-type": chosen.name}},
            "spec": pod_spec}
