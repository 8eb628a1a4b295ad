"""Kubernetes compute through the api (TestClient, no controller): the ARM document of an attached cluster, and bad
attaches and submits refused with an ARM error naming the field, changing nothing; with a kubeconfig, a namespace
the cluster does not have (its API server, a stand-in here, says 404) is refused at attach."""

import pytest

from emulator.services import kubernetes
from tests.kube_api import FakeKubeApi
from tests.service.test_api import API, WS_PATH, assert_arm_error, list_computes
from tests.service.test_jobs import JOBS, job_body, put_job, ready  # noqa: F401 (`ready`: a fixture)

AKS = "/subscriptions/s1/resourceGroups/rg/providers/Microsoft.ContainerService/managedClusters/aks1"
COMPUTE = f"{WS_PATH}/computes/k8s"


def attach_body(resource_id: str = AKS, **inner) -> dict:
    return {"properties": {"computeType": "Kubernetes", "resourceId": resource_id,
                           "properties": {"namespace": "ml", **inner}}}


def test_an_attached_cluster_reads_back_as_azure_shows_it(client, auth):
    answer = client.put(COMPUTE, params=API, headers=auth, json=attach_body(
        instanceTypes={"small": {"resources": {"limits": {"cpu": "1", "memory": "1Gi"}}}}))
    assert answer.status_code == 201, answer.text
    props = client.get(COMPUTE, params=API, headers=auth).json()["properties"]
    assert (props["computeType"], props["provisioningState"], props["isAttachedCompute"]) == \
        ("Kubernetes", "Succeeded", True)
    assert props["resourceId"] == AKS
    assert props["properties"] == {"namespace": "ml", "defaultInstanceType": "defaultinstancetype",
                                   "instanceTypes": {"small": {"resources": {"limits": {"cpu": "1", "memory": "1Gi"}}}}}
    assert "running on the local runtime" in props["description"]
    assert client.delete(COMPUTE, params={**API, "underlyingResourceAction": "Detach"}, headers=auth).status_code in \
        (200, 202)
    assert client.get(COMPUTE, params=API, headers=auth).status_code == 404


@pytest.mark.parametrize(("body", "target"), [
    (attach_body("/subscriptions/s1/resourceGroups/rg"), "properties.resourceId"),
    (attach_body(defaultInstanceType="gpu"), "properties.properties.defaultInstanceType"),
    (attach_body(instanceTypes={"x": {"resources": {"requests": {"cpu": "lots"}}}}),
     "properties.properties.instanceTypes.x.resources.requests.cpu"),
    (attach_body(namespace="Bad Namespace"), "properties.properties.namespace"),
])
def test_bad_attaches_change_nothing(client, auth, body, target):
    before = list_computes(client, auth)
    assert_arm_error(client.put(COMPUTE, params=API, headers=auth, json=body), 400, "ValidationError", target)
    assert list_computes(client, auth) == before


def test_an_unknown_instance_type_is_refused_at_submit(client, auth, ready):  # noqa: F811 (the fixture)
    assert client.put(COMPUTE, params=API, headers=auth, json=attach_body()).status_code == 201
    body = job_body(computeId=COMPUTE, resources={"instanceCount": 1, "instanceType": "huge"})
    assert_arm_error(client.put(f"{JOBS}/k1", params=API, headers=auth, json=body), 400, "ValidationError",
                     "properties.resources.instanceType")
    assert client.get(f"{JOBS}/k1", params=API, headers=auth).status_code == 404
    put_job(client, auth, "k2", job_body(computeId=COMPUTE, resources={"instanceCount": 1}))  # the default's


def test_with_a_kubeconfig_a_missing_namespace_is_refused(client, auth, settings):
    server = FakeKubeApi(namespaces={"default"})
    try:
        server.write_kubeconfig(kubernetes.kubeconfig_path(settings.data_dir, AKS))
        assert_arm_error(client.put(COMPUTE, params=API, headers=auth, json=attach_body()), 400, "ValidationError",
                         "properties.properties.namespace")
        assert client.get(COMPUTE, params=API, headers=auth).status_code == 404
        answer = client.put(COMPUTE, params=API, headers=auth, json=attach_body(namespace="default"))
        assert answer.status_code == 201, answer.text
        assert "jobs and model servers run as pods on" in answer.json()["properties"]["description"]
    finally:
        server.close()
