"""Kubernetes compute: an AKS or Arc cluster attached with a namespace and instance types. Pure.

On the wire (azure-ai-ml's KubernetesProperties): `properties.properties` holds `namespace`, `defaultInstanceType` and
`instanceTypes: {name: {nodeSelector, resources: {requests, limits}}}`, the shape of the Azure ML extension's
`InstanceType` custom resource (amlarc.azureml.com/v1alpha1): CPU and memory as Kubernetes quantities ("100m", "2",
"2Gi"), GPUs as `nvidia.com/gpu`. When a cluster is attached the extension makes `defaultinstancetype` (requests
100m / 2Gi, limits 2 CPUs / 2Gi, no GPU), which a job that names no instance type gets (learn.microsoft.com,
"Create and manage instance types").

Without a kubeconfig for the cluster the emulator runs the compute on its own machine ("local fallback"): one hidden
cluster per instance type, whose one-job nodes get the instance type's limits as they are (a pod's, not a VM's).
"""

import re
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation

from emulator.domain.compute import vm_sizes
from emulator.errors import ValidationFailed

DEFAULT_NAME = "defaultinstancetype"
DEFAULT_NAMESPACE = "default"
GPU = "nvidia.com/gpu"
T = "properties.properties"
# Compute names never hold a '.' (names.compute_name): no compute a user makes can be taken for a fallback cluster.
PREFIX = "kubernetes."
SIZE_FAMILY = "kubernetes"
MOST_FALLBACK_NODES = 64  # an attached cluster's size is not known: the fallback's nodes scale to the demand up to this
# AKS: Microsoft.ContainerService/managedClusters; Arc-enabled: Microsoft.Kubernetes/connectedClusters.
_RESOURCE_ID = re.compile(
    r"^/subscriptions/[^/]+/resourceGroups/[^/]+/providers/"
    r"(Microsoft\.ContainerService/managedClusters|Microsoft\.Kubernetes/connectedClusters)/([^/]+)$", re.IGNORECASE)
_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")  # a namespace's name (RFC 1123 label)
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$")  # a custom resource's name
_QUANTITY = re.compile(r"^([+]?[0-9]*\.?[0-9]+)(m|k|M|G|T|P|E|Ki|Mi|Gi|Ti|Pi|Ei|[eE][+-]?[0-9]+)?$")
_FACTORS = {"m": Decimal("0.001"), "k": Decimal(10) ** 3, "M": Decimal(10) ** 6, "G": Decimal(10) ** 9,
            "T": Decimal(10) ** 12, "P": Decimal(10) ** 15, "E": Decimal(10) ** 18,
            "Ki": Decimal(2) ** 10, "Mi": Decimal(2) ** 20, "Gi": Decimal(2) ** 30, "Ti": Decimal(2) ** 40,
            "Pi": Decimal(2) ** 50, "Ei": Decimal(2) ** 60}
GIB = 2**30
MOST = Decimal(2) ** 62


def quantity(value: object, target: str) -> Decimal:
    """A Kubernetes resource quantity ("100m", "2", "1.5", "2Gi", "500M", "1e3") as a plain number."""
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise ValidationFailed(f"{target} must be a Kubernetes quantity such as \"500m\", \"2\" or \"2Gi\", got "
                               f"{value!r}.", target=target)
    match = _QUANTITY.match(str(value).strip())
    if match is None:
        raise ValidationFailed(f"{target} is not a Kubernetes quantity: {value!r} (use e.g. \"500m\", \"2\", "
                               "\"2Gi\").", target=target)
    number, suffix = match.groups()
    if suffix and suffix not in _FACTORS:  # a decimal exponent (e3, E-2)
        exponent = int(suffix[1:])
        factor = Decimal(10) ** exponent if abs(exponent) <= 30 else Decimal("inf") if exponent > 0 else Decimal(0)
    else:
        factor = _FACTORS.get(suffix or "", Decimal(1))
    try:
        amount = Decimal(number) * factor
    except InvalidOperation:
        amount = Decimal("inf")
    if amount > MOST:  # past any machine: Kubernetes itself caps quantities near 2^63
        raise ValidationFailed(f"{target} is out of range: {value!r}.", target=target)
    return amount


@dataclass(frozen=True)
class Resources:
    """CPUs (cores), memory (bytes) and GPUs; None where the instance type sets none."""
    cpu: float | None = None
    memory: int | None = None
    gpus: int = 0

    def to_kubernetes(self) -> dict[str, str]:
        """As a pod's `resources.requests` or `.limits`."""
        out = {}
        if self.cpu is not None:
            out["cpu"] = f"{int(round(self.cpu * 1000))}m"
        if self.memory is not None:
            out["memory"] = str(self.memory)
        if self.gpus:
            out[GPU] = str(self.gpus)
        return out


def _resources(value: object, target: str) -> Resources:
    if value is None:
        return Resources()
    if not isinstance(value, dict):
        raise ValidationFailed(f"{target} must be an object such as {{\"cpu\": \"2\", \"memory\": \"2Gi\"}}.",
                               target=target)
    unknown = sorted(set(value) - {"cpu", "memory", GPU})
    if unknown:
        raise ValidationFailed(f"{target}.{unknown[0]} is not a resource an instance type sets (cpu, memory, {GPU}).",
                               target=f"{target}.{unknown[0]}")
    cpu = None if value.get("cpu") is None else quantity(value["cpu"], f"{target}.cpu")
    memory = None if value.get("memory") is None else quantity(value["memory"], f"{target}.memory")
    gpus = Decimal(0) if value.get(GPU) is None else quantity(value[GPU], f"{target}.{GPU}")
    for name, amount in (("cpu", cpu), ("memory", memory), (GPU, gpus)):
        if amount is not None and amount <= 0 and not (name == GPU and amount == 0):
            raise ValidationFailed(f"{target}.{name} must be above zero.", target=f"{target}.{name}")
    if gpus != gpus.to_integral_value():
        raise ValidationFailed(f"{target}.{GPU} must be a whole number of GPUs, got {value[GPU]!r}.",
                               target=f"{target}.{GPU}")
    if cpu is not None and cpu < Decimal("0.001"):
        raise ValidationFailed(f"{target}.cpu must be at least 1m, got {value['cpu']!r}.", target=f"{target}.cpu")
    return Resources(None if cpu is None else float(cpu), None if memory is None else int(memory), int(gpus))


@dataclass(frozen=True)
class InstanceType:
    name: str
    node_selector: dict[str, str] = field(default_factory=dict)
    requests: Resources = Resources()
    limits: Resources = Resources()

    @property
    def gpus(self) -> int:
        return self.limits.gpus or self.requests.gpus

    def size(self) -> vm_sizes.VmSize:
        """What a fallback node is: the limits as they are (else the requests; else the default's limits)."""
        cpu = self.limits.cpu or self.requests.cpu or DEFAULT.limits.cpu
        memory = self.limits.memory or self.requests.memory or DEFAULT.limits.memory
        return node_size(self.name, cpu, memory / GIB, self.gpus)

    def limits_record(self) -> dict:
        """The limits a stored body keeps (`node_size` reads them back)."""
        size = self.size()
        return {"name": self.name, "vCPUs": size.vcpus, "memoryGB": size.memory_gb, "gpus": size.gpus}

    def describe(self) -> str:
        limits = self.size()
        return f"{self.name} ({limits.vcpus:g} CPU, {limits.memory_gb:g} GiB" + \
            (f", {self.gpus} GPU)" if self.gpus else ")")


def node_size(name: str, cpus: float, memory_gb: float, gpus: int) -> vm_sizes.VmSize:
    """A node (or model server) of an instance type's limits, as a size the runtime applies as it is."""
    return vm_sizes.VmSize(name=f"{SIZE_FAMILY}:{name}", family=SIZE_FAMILY, vcpus=cpus, memory_gb=memory_gb,
                           gpus=gpus, os_vhd_size_mb=0, max_resource_volume_mb=0, low_priority_capable=False,
                           premium_io=False, supported_compute_types=(), exact=True)


DEFAULT = InstanceType(DEFAULT_NAME, {}, Resources(0.1, 2 * GIB), Resources(2.0, 2 * GIB))


def instance_type(name: str, value: object, target: str) -> InstanceType:
    if not isinstance(name, str) or not _DNS_SUBDOMAIN.match(name):
        raise ValidationFailed(f"Instance type name {name!r} is not a valid Kubernetes resource name (lower case "
                               "letters, digits, '-' and '.').", target=target)
    if not isinstance(value, dict):
        raise ValidationFailed(f"{target} must be an object with nodeSelector and resources.", target=target)
    selector = value.get("nodeSelector") or {}
    if not isinstance(selector, dict) or not all(isinstance(v, str) for v in selector.values()):
        raise ValidationFailed(f"{target}.nodeSelector must map label names to strings.",
                               target=f"{target}.nodeSelector")
    resources = value.get("resources") or {}
    if not isinstance(resources, dict):
        raise ValidationFailed(f"{target}.resources must be an object with requests and limits.",
                               target=f"{target}.resources")
    requests = _resources(resources.get("requests"), f"{target}.resources.requests")
    limits = _resources(resources.get("limits"), f"{target}.resources.limits")
    for what in ("cpu", "memory"):
        asked, most = getattr(requests, what), getattr(limits, what)
        if asked is not None and most is not None and asked > most:
            raise ValidationFailed(f"{target}.resources.requests.{what} must not exceed its limit.",
                                   target=f"{target}.resources.requests.{what}")
    return InstanceType(name, dict(selector), requests, limits)


@dataclass(frozen=True)
class KubernetesSpec:
    resource_id: str
    cluster_name: str
    namespace: str
    default_instance_type: str
    instance_types: dict[str, InstanceType]

    def resolve(self, name: object, target: str) -> InstanceType:
        """The instance type a job or deployment asks for (None: the compute's default)."""
        name = self.default_instance_type if name is None else name
        found = self.instance_types.get(name) if isinstance(name, str) else None
        if found is None:
            raise ValidationFailed(f"Instance type {name!r} is not one of this Kubernetes compute's: "
                                   f"{', '.join(sorted(self.instance_types))}.", target=target)
        return found


def resource_id(value: object, target: str = "properties.resourceId") -> tuple[str, str]:
    """(the resource id, the cluster's name) of an AKS or Arc-enabled cluster."""
    match = _RESOURCE_ID.match(value) if isinstance(value, str) else None
    # Its names make the folder of the cluster's kubeconfig: "." or ".." would lead out of it.
    if match is None or any(part in (".", "..") for part in value.split("/")):
        raise ValidationFailed(
            f"{target} must be the ARM id of an AKS cluster (/subscriptions/{{s}}/resourceGroups/{{rg}}/providers/"
            "Microsoft.ContainerService/managedClusters/{name}) or an Azure Arc-enabled one (.../providers/"
            f"Microsoft.Kubernetes/connectedClusters/{{name}}), got {value!r}.", target=target)
    return value, match.group(2)


def parse(outer: dict, inner: dict) -> KubernetesSpec:
    """Check a Kubernetes compute's PUT: `outer` its `properties`, `inner` their `properties`."""
    rid, cluster = resource_id(outer.get("resourceId"))
    namespace = inner.get("namespace")
    namespace = DEFAULT_NAMESPACE if namespace is None else namespace
    if not isinstance(namespace, str) or not _DNS_LABEL.match(namespace):
        raise ValidationFailed(f"{T}.namespace must be a Kubernetes namespace name (lower case letters, digits and "
                               f"'-', at most 63), got {namespace!r}.", target=f"{T}.namespace")
    given = inner.get("instanceTypes") or {}
    if not isinstance(given, dict):
        raise ValidationFailed(f"{T}.instanceTypes must map names to instance types.", target=f"{T}.instanceTypes")
    types = {DEFAULT_NAME: DEFAULT, **{name: instance_type(name, value, f"{T}.instanceTypes.{name}")
                                       for name, value in given.items()}}
    default = inner.get("defaultInstanceType")
    default = DEFAULT_NAME if default is None else default
    if default not in types:
        raise ValidationFailed(f"{T}.defaultInstanceType {default!r} is not among the instance types: "
                               f"{', '.join(sorted(types))}.", target=f"{T}.defaultInstanceType")
    return KubernetesSpec(rid, cluster, namespace, default, types)


def fallback_cluster_name(compute_name: str, type_name: str) -> str:
    return f"{PREFIX}{compute_name}.{type_name}"


def is_fallback(compute_name: str) -> bool:
    return compute_name.startswith(PREFIX)


def shown_name(compute_name: str) -> str:
    """The compute a job's runs show: a fallback cluster's Kubernetes compute (compute names hold no '.')."""
    return compute_name.split(".")[1] if is_fallback(compute_name) else compute_name


def fallback_size(props: dict) -> vm_sizes.VmSize:
    """A fallback cluster's node size, from its body (`fallback_body`)."""
    given = props.get("kubernetes") or {}
    return node_size(str(given.get("instanceType")), float(given.get("vCPUs", 1.0)),
                 float(given.get("memoryGB", 1.0)), int(given.get("gpus", 0)))


def fallback_note(spec: KubernetesSpec, chosen: InstanceType) -> str:
    return (f"amlemu: no kubeconfig for {spec.resource_id}: running on the local runtime, instance type "
            f"{chosen.describe()}")


def fallback_body(location: str, compute_name: str, spec: KubernetesSpec, chosen: InstanceType) -> dict:
    """The hidden cluster an instance type runs on without a kubeconfig, as if it had been PUT: one-job nodes of the
    instance type's limits, from zero, as many as the demand (an attached cluster's size is not the emulator's)."""
    size = chosen.size()
    return {"location": location, "tags": {}, "identity": None,
            "properties": {"computeType": "AmlCompute", "disableLocalAuth": True,
                           "description": f"Kubernetes compute {compute_name} on the local runtime (no kubeconfig)",
                           "properties": {"vmSize": chosen.size().name, "vmPriority": "Dedicated", "osType": "Linux",
                                          "kubernetes": {"compute": compute_name, "resourceId": spec.resource_id,
                                                         "instanceType": chosen.name, "vCPUs": size.vcpus,
                                                         "memoryGB": size.memory_gb, "gpus": size.gpus,
                                                         "note": fallback_note(spec, chosen)},
                                          "scaleSettings": {"minNodeCount": 0, "maxNodeCount": MOST_FALLBACK_NODES,
                                                            "nodeIdleTimeBeforeScaleDown": "PT2M"}}}}
