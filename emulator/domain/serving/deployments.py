"""An online deployment's PUT body, checked and filled with Azure's defaults; its probes. Pure.

A managed deployment's instances are VMs of a size; a Kubernetes one's (`endpointComputeType: Kubernetes`, on an
endpoint with a Kubernetes `compute`) are pods of one of that compute's instance types, whose limits its model
servers get as they are."""

import re
from dataclasses import dataclass

from emulator.domain import durations, payload
from emulator.domain.compute import kubernetes, vm_sizes
from emulator.domain.registries import ids as registry_ids
from emulator.errors import ValidationFailed

P = "properties"
DEFAULT_INSTANCE_TYPE = "Standard_DS3_v2"
MAX_INSTANCES = 20  # per deployment here: each instance is a container on this one machine
# Azure's defaults (ManagedOnlineDeployment reference): the SDK 1.35 needs them back to parse a deployment.
DEFAULT_PROBE = {"initialDelay": "PT10S", "period": "PT10S", "timeout": "PT2S", "successThreshold": 1,
                 "failureThreshold": 30}
DEFAULT_REQUESTS = {"requestTimeout": "PT5S", "maxConcurrentRequestsPerInstance": 1, "maxQueueWait": "PT0.5S"}
# An asset version's ARM id: .../workspaces/<ws>/<kind>/<name>/versions/<version>
_VERSION_ID = re.compile(r"^/subscriptions/[^/]+/resourceGroups/[^/]+/providers/Microsoft\.MachineLearningServices/"
                         r"workspaces/[^/]+/(?P<kind>models|codes|environments)/(?P<name>[^/]+)/versions/"
                         r"(?P<version>[^/]+)$", re.IGNORECASE)


@dataclass(frozen=True)
class Probe:
    initial_delay: float
    period: float
    timeout: float
    success_threshold: int
    failure_threshold: int


@dataclass(frozen=True)
class AssetRef:
    kind: str
    name: str
    version: str | None  # None: a registry's label 'latest', pinned when the deployment is stored
    registry: str | None = None  # a user registry's asset (azureml://registries/...), else the workspace's


def asset_ref(value: object, kind: str, target: str) -> AssetRef:
    """An asset version named by its ARM id, as the SDK sends model, codeId and environmentId, or a model or
    environment of a registry by its azureml://registries/... id."""
    text = payload.required_string(value, target)
    if kind != "codes" and registry_ids.is_asset_id(text):
        named = registry_ids.asset_ref(text, kind, target)
        return AssetRef(kind, named.name, named.version, named.registry)
    match = _VERSION_ID.fullmatch(text.strip())
    if not match or match["kind"].lower() != kind:
        raise ValidationFailed(f"{target} must be the ARM id of a {kind[:-1]} version "
                               f"(/subscriptions/.../workspaces/<ws>/{kind}/<name>/versions/<version>), got {text!r}.",
                               target=target)
    return AssetRef(kind, match["name"], match["version"])


def _probe(value: object, target: str) -> dict:
    given = payload.obj(value, target)
    probe = {**DEFAULT_PROBE, **{k: v for k, v in given.items() if v is not None}}
    for key in ("initialDelay", "period", "timeout"):
        durations.parse_seconds(probe[key], f"{target}.{key}")
    for key in ("successThreshold", "failureThreshold"):
        if isinstance(probe[key], bool) or not isinstance(probe[key], int) or probe[key] < 1:
            raise ValidationFailed(f"{target}.{key} must be a positive integer, got {probe[key]!r}.",
                                   target=f"{target}.{key}")
    return probe


def probe(stored: dict) -> Probe:
    return Probe(durations.parse_seconds(stored["initialDelay"], "initialDelay"),
                 max(0.1, durations.parse_seconds(stored["period"], "period")),
                 max(0.1, durations.parse_seconds(stored["timeout"], "timeout")),
                 stored["successThreshold"], stored["failureThreshold"])


def _requests(value: object, target: str) -> dict:
    settings = {**DEFAULT_REQUESTS, **{k: v for k, v in payload.obj(value, target).items() if v is not None}}
    durations.parse_seconds(settings["requestTimeout"], f"{target}.requestTimeout")
    count = settings["maxConcurrentRequestsPerInstance"]
    if isinstance(count, bool) or not isinstance(count, int) or count < 1:
        raise ValidationFailed(f"{target}.maxConcurrentRequestsPerInstance must be a positive integer.",
                               target=f"{target}.maxConcurrentRequestsPerInstance")
    return settings


def instance_count(body: dict) -> int:
    sku = payload.obj(body.get("sku"), "sku")
    count = sku.get("capacity", 1)
    if isinstance(count, bool) or not isinstance(count, int) or not 0 <= count <= MAX_INSTANCES:
        raise ValidationFailed(f"sku.capacity (instance_count) must be a whole number from 0 to {MAX_INSTANCES}, "
                               f"got {count!r}.", target="sku.capacity")
    return count


def _container_resources(props: dict, chosen: kubernetes.InstanceType) -> dict:
    """A Kubernetes deployment's containerResourceRequirements: as given, else its instance type's requests and
    limits, which its pods get (the SDK reads it back from every Kubernetes deployment)."""
    given = payload.obj(props.get("containerResourceRequirements"), f"{P}.containerResourceRequirements")
    return given or {"containerResourceRequests": _settings(chosen.requests),
                     "containerResourceLimits": _settings(chosen.limits)}


def _settings(resources: kubernetes.Resources) -> dict:
    """Kubernetes quantities as Azure's ContainerResourceSettings."""
    quantities = resources.to_kubernetes()
    return {"cpu": quantities.get("cpu"), "memory": quantities.get("memory"), "gpu": quantities.get(kubernetes.GPU)}


def _instance_type(props: dict, on: kubernetes.KubernetesSpec | None) -> tuple[str, str, dict, dict]:
    """(endpointComputeType, instanceType, what refs keep of a Kubernetes instance type's limits, what the stored
    properties add for it)."""
    compute_type = props.get("endpointComputeType") or ("Kubernetes" if on else "Managed")
    if compute_type == "Kubernetes" and on is not None:
        chosen = on.resolve(props.get("instanceType"), f"{P}.instanceType")
        return compute_type, chosen.name, {"kubernetes": chosen.limits_record()}, \
            {"containerResourceRequirements": _container_resources(props, chosen)}
    if compute_type != "Managed" or on is not None:
        raise ValidationFailed(f"{P}.endpointComputeType must be Kubernetes on an endpoint with a Kubernetes compute "
                               f"and Managed on any other, got {compute_type!r}.", target=f"{P}.endpointComputeType")
    size_name = props.get("instanceType") or DEFAULT_INSTANCE_TYPE
    size = vm_sizes.find(size_name)
    if size is None:
        raise ValidationFailed(f"Instance type '{size_name}' is not a supported VM size; list them with "
                               "ml_client.compute.list_sizes().", target=f"{P}.instanceType")
    return compute_type, size.name, {}, {}


def size_of(body: dict) -> vm_sizes.VmSize:
    """What one instance of a stored deployment is: its VM size, or its Kubernetes instance type's limits."""
    limits = body.get("refs", {}).get("kubernetes")
    if limits:
        return kubernetes.node_size(limits["name"], limits["vCPUs"], limits["memoryGB"], limits["gpus"])
    return vm_sizes.find(body[P]["instanceType"])


def priced_as(body: dict) -> str | None:
    """The size the meter prices an instance as: a Kubernetes instance type's is the user's own (Azure bills none)."""
    limits = body.get("refs", {}).get("kubernetes")
    return size_of(body).name if limits else body.get(P, {}).get("instanceType")


def validated(body: object, on: kubernetes.KubernetesSpec | None = None) -> dict:
    """The stored deployment: what the user gave, checked, with the defaults Azure fills in (`on`: the Kubernetes
    compute of its endpoint, if it has one)."""
    body = payload.obj(body, "body", required=True)
    payload.finite(body)
    props = payload.obj(body.get(P), P, required=True)
    compute_type, instance_type, limits, kubernetes_props = _instance_type(props, on)
    model = asset_ref(props.get("model"), "models", f"{P}.model")
    environment = asset_ref(props.get("environmentId"), "environments", f"{P}.environmentId")
    code = payload.obj(props.get("codeConfiguration"), f"{P}.codeConfiguration", required=True)
    code_ref = asset_ref(code.get("codeId"), "codes", f"{P}.codeConfiguration.codeId")
    script = payload.required_string(code.get("scoringScript"), f"{P}.codeConfiguration.scoringScript")
    if script.startswith("/") or ".." in script.split("/"):
        raise ValidationFailed(f"{P}.codeConfiguration.scoringScript must be a path inside the code folder, "
                               f"got {script!r}.", target=f"{P}.codeConfiguration.scoringScript")
    scale = payload.obj(props.get("scaleSettings"), f"{P}.scaleSettings") or {"scaleType": "Default"}
    if scale.get("scaleType", "Default") != "Default":
        raise ValidationFailed(f"{P}.scaleSettings.scaleType must be Default (target-utilization autoscale is not "
                               f"emulated), got {scale.get('scaleType')!r}.", target=f"{P}.scaleSettings.scaleType")
    count = instance_count(body)
    return {"location": body.get("location"), "tags": payload.tags(body.get("tags")),
            "sku": {"name": "Default", "tier": "Standard", "capacity": count},
            P: {"endpointComputeType": compute_type, "instanceType": instance_type,
                "model": props["model"], "environmentId": props["environmentId"],
                "codeConfiguration": {"codeId": code["codeId"], "scoringScript": script},
                "description": payload.string(props.get("description"), f"{P}.description"),
                "environmentVariables": payload.string_map(props.get("environmentVariables"),
                                                           f"{P}.environmentVariables"),
                "properties": payload.string_map(props.get("properties"), f"{P}.properties"),
                "appInsightsEnabled": bool(props.get("appInsightsEnabled", False)),
                "egressPublicNetworkAccess": props.get("egressPublicNetworkAccess") or "Enabled",
                "scaleSettings": {"scaleType": "Default"},
                "requestSettings": _requests(props.get("requestSettings"), f"{P}.requestSettings"),
                "livenessProbe": _probe(props.get("livenessProbe"), f"{P}.livenessProbe"),
                "readinessProbe": _probe(props.get("readinessProbe"), f"{P}.readinessProbe"), **kubernetes_props},
            "refs": {"model": vars(model), "environment": vars(environment), "code": vars(code_ref), **limits}}


def needs_new_instances(old: dict, new: dict) -> bool:
    """Whether an update replaces the running containers (anything but the instance count and tags)."""
    ignored = ("description", "properties")
    strip = lambda stored: {k: v for k, v in stored[P].items() if k not in ignored}  # noqa: E731
    return strip(old) != strip(new)
