"""Kubernetes compute through the unmodified azure-ai-ml SDK against the composed stack, with no kubeconfig: the
attached cluster runs on the local runtime and says so; a job naming an instance type runs in a container with that
instance type's limits (its CPUs and memory as Docker holds it to them), its log opening with the note, on a node
no compute listing shows; detached, the compute and its node are gone."""

import docker
import pytest
from azure.ai.ml import command
from azure.ai.ml.entities import Environment, KubernetesCompute

from emulator.domain.compute import kubernetes
from tests.waiting import wait_until

pytestmark = pytest.mark.e2e
ENV = Environment(image="python:3.11-slim")
TYPES = {"small": {"nodeSelector": {"pool": "cpu"},
                   "resources": {"requests": {"cpu": "250m", "memory": "256Mi"},
                                 "limits": {"cpu": "500m", "memory": "768Mi"}}}}
# What the job reads of its own cgroup: its CPU quota and memory limit, as the kernel holds it to them.
# cgroup v2, else v1.
MAIN = '''from pathlib import Path
root = Path("/sys/fs/cgroup")
if (root / "cpu.max").exists():
    quota, period = (root / "cpu.max").read_text().split()
    memory = (root / "memory.max").read_text().strip()
else:
    quota, period = ((root / "cpu" / f"cpu.cfs_{n}_us").read_text().strip() for n in ("quota", "period"))
    memory = (root / "memory" / "memory.limit_in_bytes").read_text().strip()
print("cpus", int(quota) / int(period))
print("memory", memory)
'''


def test_a_job_on_kubernetes_compute_runs_locally_with_its_instance_type(ml_client, stack, job_dir, nodes_of,
                                                                         tmp_path):
    rid = (f"/subscriptions/{stack.subscription}/resourceGroups/{stack.resource_group}/providers/"
           "Microsoft.ContainerService/managedClusters/aks-e2e")
    compute = ml_client.compute.begin_create_or_update(KubernetesCompute(
        name="k8s-e2e", resource_id=rid, namespace="ml", properties={"instanceTypes": TYPES})).result()
    assert compute.provisioning_state == "Succeeded" and "running on the local runtime" in compute.description
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "main.py").write_text(MAIN)
    job = ml_client.jobs.create_or_update(command(code=str(tmp_path / "src"), command="python main.py",
                                                  compute="k8s-e2e", instance_type="small", environment=ENV))
    assert job.compute == "k8s-e2e" and job.resources.instance_type == "small"
    wait_until(lambda: ml_client.jobs.get(job.name).status in ("Completed", "Failed", "Canceled"), timeout=600,
               interval=1, message=f"job {job.name} on Kubernetes compute to end")
    log = (job_dir(job.name) / "user_logs" / "std_log.txt").read_text()
    assert ml_client.jobs.get(job.name).status == "Completed", log[-4000:]
    assert f"amlemu: no kubeconfig for {rid}: running on the local runtime, instance type small" in log
    assert "cpus 0.5" in log and f"memory {768 * 2**20}" in log
    hidden = kubernetes.fallback_cluster_name("k8s-e2e", "small")
    (node,) = nodes_of(hidden)
    assert docker.from_env().containers.get(node.id).attrs["HostConfig"]["NanoCpus"] == 500_000_000
    assert "k8s-e2e" in [c.name for c in ml_client.compute.list()]
    assert not any(c.name.startswith(kubernetes.PREFIX) for c in ml_client.compute.list())

    ml_client.compute.begin_delete("k8s-e2e", action="Detach").result()
    wait_until(lambda: nodes_of(hidden) == [], timeout=120, interval=1, message="the local stand-in's node to go")
    assert "k8s-e2e" not in [c.name for c in ml_client.compute.list()]
