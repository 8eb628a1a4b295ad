"""Kubernetes compute's rules: quantities as Kubernetes reads them, the InstanceType shape, the extension's default
instance type, resource ids of AKS and Arc clusters, and the local fallback's node size."""

from decimal import Decimal

import pytest

from emulator.domain.compute import cost, kubernetes, vm_sizes
from emulator.errors import ValidationFailed

AKS = "/subscriptions/s1/resourceGroups/rg/providers/Microsoft.ContainerService/managedClusters/aks1"
ARC = "/subscriptions/s1/resourceGroups/rg/providers/Microsoft.Kubernetes/connectedClusters/arc1"
GPU_TYPE = {"nodeSelector": {"accelerator": "t4"},
            "resources": {"requests": {"cpu": "500m", "memory": "4Gi", "nvidia.com/gpu": "1"},
                          "limits": {"cpu": "4", "memory": "8Gi", "nvidia.com/gpu": 1}}}


@pytest.mark.parametrize(("given", "expected"), [
    ("100m", Decimal("0.1")), ("2", Decimal(2)), ("1.5", Decimal("1.5")), (2, Decimal(2)), ("2Gi", Decimal(2**31)),
    ("512Mi", Decimal(512 * 2**20)), ("1G", Decimal(10**9)), ("1e3", Decimal(1000)), ("128974848", Decimal(128974848)),
    ("1k", Decimal(1000)), ("1Ki", Decimal(1024)), ("1Ei", Decimal(2**60)), ("1E", Decimal(10**18)),
])
def test_quantities_read_as_kubernetes_reads_them(given, expected):
    assert kubernetes.quantity(given, "q") == expected


@pytest.mark.parametrize("given", ["2 Gi", "2GB", "-1", "abc", "", "1.2.3", True, None, [1], "1e99", "9Ei"])
def test_a_malformed_quantity_names_its_field(given):
    with pytest.raises(ValidationFailed) as caught:
        kubernetes.quantity(given, "properties.properties.instanceTypes.x.resources.limits.memory")
    assert caught.value.target == "properties.properties.instanceTypes.x.resources.limits.memory"


def test_the_default_instance_type_is_the_extensions():
    default = kubernetes.DEFAULT
    assert default.name == "defaultinstancetype" and default.node_selector == {}
    assert default.requests == kubernetes.Resources(0.1, 2 * 2**30) and default.limits == kubernetes.Resources(2.0, 2**31)
    assert default.requests.to_kubernetes() == {"cpu": "100m", "memory": str(2**31)}


def test_an_attach_with_instance_types_and_a_default_among_them():
    spec = kubernetes.parse({"resourceId": AKS}, {"namespace": "ml", "defaultInstanceType": "gpu",
                                                  "instanceTypes": {"gpu": GPU_TYPE}})
    assert (spec.cluster_name, spec.namespace, spec.default_instance_type) == ("aks1", "ml", "gpu")
    gpu = spec.resolve(None, "t")
    assert gpu.node_selector == {"accelerator": "t4"} and gpu.gpus == 1
    assert gpu.limits.to_kubernetes() == {"cpu": "4000m", "memory": str(8 * 2**30), "nvidia.com/gpu": "1"}
    assert spec.resolve("defaultinstancetype", "t") == kubernetes.DEFAULT  # the extension's is always there


def test_nothing_given_means_the_default_namespace_and_instance_type():
    spec = kubernetes.parse({"resourceId": ARC}, {})
    assert (spec.namespace, spec.default_instance_type, spec.cluster_name) == ("default", "defaultinstancetype", "arc1")


@pytest.mark.parametrize(("outer", "inner", "target"), [
    ({"resourceId": "/subscriptions/s/resourceGroups/rg/providers/Microsoft.Compute/virtualMachines/vm"}, {},
     "properties.resourceId"),
    ({}, {}, "properties.resourceId"),
    # names that would lead out of the kubeconfigs' folder (data dir/kubernetes/sub/rg/name/kubeconfig)
    ({"resourceId": "/subscriptions/s/resourceGroups/../providers/Microsoft.ContainerService/managedClusters/.."}, {},
     "properties.resourceId"),
    ({"resourceId": "/subscriptions/../resourceGroups/rg/providers/Microsoft.Kubernetes/connectedClusters/c"}, {},
     "properties.resourceId"),
    ({"resourceId": AKS}, {"namespace": "Not_A_Namespace"}, "properties.properties.namespace"),
    ({"resourceId": AKS}, {"defaultInstanceType": "big"}, "properties.properties.defaultInstanceType"),
    ({"resourceId": AKS}, {"instanceTypes": {"x": {"resources": {"limits": {"cpu": "two"}}}}},
     "properties.properties.instanceTypes.x.resources.limits.cpu"),
    ({"resourceId": AKS}, {"instanceTypes": {"x": {"resources": {"requests": {"cpu": "3"}, "limits": {"cpu": "2"}}}}},
     "properties.properties.instanceTypes.x.resources.requests.cpu"),
    ({"resourceId": AKS}, {"instanceTypes": {"x": {"resources": {"limits": {"nvidia.com/gpu": "0.5"}}}}},
     "properties.properties.instanceTypes.x.resources.limits.nvidia.com/gpu"),
    ({"resourceId": AKS}, {"instanceTypes": {"x": {"resources": {"limits": {"ephemeral": "1"}}}}},
     "properties.properties.instanceTypes.x.resources.limits.ephemeral"),
    ({"resourceId": AKS}, {"instanceTypes": {"Big_One": {}}}, "properties.properties.instanceTypes.Big_One"),
    ({"resourceId": AKS}, {"instanceTypes": {"x": {"nodeSelector": {"a": 1}}}},
     "properties.properties.instanceTypes.x.nodeSelector"),
])
def test_bad_attaches_name_their_field(outer, inner, target):
    with pytest.raises(ValidationFailed) as caught:
        kubernetes.parse(outer, inner)
    assert caught.value.target == target


def test_an_unknown_instance_type_is_refused_naming_the_jobs_field():
    spec = kubernetes.parse({"resourceId": AKS}, {"instanceTypes": {"gpu": GPU_TYPE}})
    with pytest.raises(ValidationFailed) as caught:
        spec.resolve("huge", "properties.resources.instanceType")
    assert caught.value.target == "properties.resources.instanceType" and "defaultinstancetype, gpu" in caught.value.message


def test_a_fallback_node_gets_the_limits_as_they_are():
    spec = kubernetes.parse({"resourceId": AKS}, {"instanceTypes": {"gpu": GPU_TYPE,
                                                                    "half": {"resources": {"limits": {"cpu": "500m"}}}}})
    body = kubernetes.fallback_body("eastus", "k8s", spec, spec.resolve("gpu", "t"))
    props = body["properties"]["properties"]
    size = kubernetes.fallback_size(props)
    assert (size.vcpus, size.memory_gb, size.gpus) == (4.0, 8.0, 1)
    assert vm_sizes.scaled_limits(size, 0.25) == (4.0, 8 * 2**30)  # a pod's limits: not scaled like a VM's
    half = kubernetes.fallback_size(kubernetes.fallback_body("eastus", "k8s", spec, spec.resolve("half", "t"))
                                    ["properties"]["properties"])
    assert (half.vcpus, half.memory_gb) == (0.5, 2.0)  # no memory limit: the default's
    assert props["kubernetes"]["note"].startswith(f"amlemu: no kubeconfig for {AKS}: running on the local runtime")
    assert kubernetes.is_fallback(kubernetes.fallback_cluster_name("K8s", "gpu"))
    assert kubernetes.shown_name(kubernetes.fallback_cluster_name("k8s", "gpu.large")) == "k8s"  # what runs show
    assert kubernetes.shown_name("cpu-cluster") == "cpu-cluster"
    assert cost.rate(size.name, "Dedicated", "eastus").per_hour == 0.0  # attached compute: Azure bills it not
