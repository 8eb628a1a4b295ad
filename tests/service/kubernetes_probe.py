"""Runs in a fresh interpreter with the `amlemu env` variables: attaches a KubernetesCompute through the SDK, reads
it back, submits a job on it with an instance type, tries bad attaches and a bad instance type, detaches; prints JSON
of what the SDK saw.

Usage: python kubernetes_probe.py WORK_DIR
"""

import json
import os
import sys
from pathlib import Path

from azure.ai.ml import MLClient, command
from azure.ai.ml.entities import Environment, KubernetesCompute
from azure.identity import DefaultAzureCredential

AKS = "/subscriptions/{s}/resourceGroups/rg/providers/Microsoft.ContainerService/managedClusters/aks1"
SMALL = {"nodeSelector": {"pool": "cpu"},
         "resources": {"requests": {"cpu": "250m", "memory": "512Mi"}, "limits": {"cpu": "1", "memory": "1Gi"}}}


def _refusal(call) -> dict | None:
    try:
        call()
    except Exception as exc:  # noqa: BLE001 (whatever the SDK raises, what it carries is what the user sees)
        error = getattr(exc, "error", None)
        return {"type": type(exc).__name__, "code": getattr(error, "code", None),
                "target": getattr(error, "target", None), "message": str(exc)[:500]}
    return None


def main(work: str) -> None:
    ml = MLClient(DefaultAzureCredential(), os.environ["AMLEMU_SUBSCRIPTION_ID"],
                  os.environ["AMLEMU_RESOURCE_GROUP"], os.environ["AMLEMU_WORKSPACE"])
    rid = AKS.format(s=os.environ["AMLEMU_SUBSCRIPTION_ID"])
    made = ml.compute.begin_create_or_update(KubernetesCompute(
        name="k8s", resource_id=rid, namespace="ml",
        properties={"defaultInstanceType": "small", "instanceTypes": {"small": SMALL}})).result()
    read = ml.compute.get("k8s")
    seen = {"made": made.provisioning_state, "type": read.type, "namespace": read.namespace,
            "resource_id": read.resource_id, "state": read.provisioning_state, "description": read.description,
            "properties": read.properties, "listed": sorted(c.name for c in ml.compute.list()),
            "raw": ml.compute._operation.get(ml.resource_group_name, ml.workspace_name, "k8s").as_dict()}
    (Path(work) / "src").mkdir()
    (Path(work) / "src" / "main.py").write_text("print('hello')\n")
    job = command(code=str(Path(work) / "src"), command="python main.py", compute="k8s", instance_type="small",
                  environment=Environment(image="python:3.11-slim"))
    submitted = ml.jobs.create_or_update(job)
    seen["job"] = {"compute": submitted.compute, "instance_type": submitted.resources.instance_type,
                   "status": ml.jobs.get(submitted.name).status}
    bad_job = command(code=str(Path(work) / "src"), command="python main.py", compute="k8s", instance_type="huge",
                      environment=Environment(image="python:3.11-slim"))
    seen["bad_instance_type"] = _refusal(lambda: ml.jobs.create_or_update(bad_job))
    seen["bad_default"] = _refusal(lambda: ml.compute.begin_create_or_update(KubernetesCompute(
        name="k8s-bad", resource_id=rid, properties={"defaultInstanceType": "gpu"})).result())
    seen["bad_resource_id"] = _refusal(lambda: ml.compute.begin_create_or_update(KubernetesCompute(
        name="k8s-bad", resource_id="/subscriptions/x/resourceGroups/rg/providers/Microsoft.Compute/virtualMachines/v",
        namespace="ml")).result())
    seen["bad_quantity"] = _refusal(lambda: ml.compute.begin_create_or_update(KubernetesCompute(
        name="k8s-bad", resource_id=rid, properties={"instanceTypes": {"x": {"resources": {"limits": {"memory": "2 GB"}}}}}
    )).result())
    seen["bad_left"] = _refusal(lambda: ml.compute.get("k8s-bad")) is not None
    ml.compute.begin_delete("k8s", action="Detach").result()
    seen["after_detach"] = _refusal(lambda: ml.compute.get("k8s"))
    print(json.dumps(seen, default=str))


if __name__ == "__main__":
    main(sys.argv[1])
