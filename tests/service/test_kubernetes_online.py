"""Kubernetes online endpoints and deployments through the api (TestClient, no controller): an endpoint with a
Kubernetes `compute`, a deployment on one of the compute's instance types (its default when none is named), whose
model servers get that instance type's limits as they are; an unknown instance type, or a Managed deployment on a
Kubernetes endpoint, is refused naming the field."""

from emulator.controller.specs.model_servers import model_server_spec
from emulator.domain.compute import cost
from emulator.domain.serving import deployments
from emulator.services import endpoints as endpoint_service
from tests.service.test_api import API, WS_PATH, assert_arm_error
from tests.service.test_kubernetes_compute import attach_body
from tests.service.test_online_endpoints import ENDPOINTS, REF, deployment_body, endpoint_body, setup_assets

TYPES = {"small": {"resources": {"requests": {"cpu": "100m", "memory": "256Mi"},
                                 "limits": {"cpu": "750m", "memory": "1536Mi"}}}}


def test_a_deployment_on_kubernetes_compute_gets_its_instance_types_limits(app, client, auth):
    setup_assets(app, client, auth)
    attached = client.put(f"{WS_PATH}/computes/k8s", params=API, headers=auth,
                          json=attach_body(instanceTypes=TYPES, defaultInstanceType="small"))
    assert attached.status_code == 201, attached.text
    made = client.put(f"{ENDPOINTS}/ep-k8s", params=API, headers=auth, json=endpoint_body(compute="k8s"))
    assert made.status_code == 201, made.text
    assert made.json()["properties"]["compute"] == f"{WS_PATH}/computes/k8s"  # the SDK reads a Kubernetes endpoint
    url = f"{ENDPOINTS}/ep-k8s/deployments/blue"
    assert_arm_error(client.put(url, params=API, headers=auth, json=deployment_body(
        endpointComputeType="Kubernetes", instanceType="huge")), 400, "ValidationError", "properties.instanceType")
    assert_arm_error(client.put(url, params=API, headers=auth, json=deployment_body()), 400, "ValidationError",
                     "properties.endpointComputeType")
    assert client.get(url, params=API, headers=auth).status_code == 404
    body = deployment_body(endpointComputeType="Kubernetes")
    del body["properties"]["instanceType"]
    answer = client.put(url, params=API, headers=auth, json=body)
    assert answer.status_code == 201, answer.text
    props = answer.json()["properties"]
    assert (props["endpointComputeType"], props["instanceType"]) == ("Kubernetes", "small")
    assert props["containerResourceRequirements"] == {  # what its pods get; the SDK cannot read a deployment without
        "containerResourceRequests": {"cpu": "100m", "memory": str(256 * 2**20), "gpu": None},
        "containerResourceLimits": {"cpu": "750m", "memory": str(1536 * 2**20), "gpu": None}}
    context = app.state.context
    with context.store.transaction() as repo:
        row = repo.online_deployment(f"{REF.arm_id}/onlineendpoints/ep-k8s/deployments/blue".lower())
        found = endpoint_service.resolve(repo, REF, row.body)
        spec = model_server_spec(context.settings, context.secret, row, "ep-k8s", REF, found)
    assert (spec.cpus, spec.memory_bytes) == (0.75, 1536 * 2**20)  # a pod's limits, not scaled like a VM's
    assert cost.rate(deployments.priced_as(row.body), "Dedicated", "eastus").per_hour == 0.0  # not billed
    assert_arm_error(client.put(f"{ENDPOINTS}/ep-other", params=API, headers=auth,
                                json=endpoint_body(compute="nothere")), 400, "ValidationError", "properties.compute")
