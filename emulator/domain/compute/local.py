"""Local compute: `compute="local"` runs a command job on the machine the emulator runs on, in a container, as Azure's
local runs run on the client's machine, with its logs, outputs and metrics recorded in the workspace. Pure.

On the wire (azure-ai-ml): the SDK sends no computeId but `resources.properties.IsLocal.IsLocal: true`; the answer's
`services.Local.endpoint` is the Execution Service's URL, then "&fake=" and the URL-encoded JSON body the SDK POSTs
there (with its token) before it unzips the answer and runs its `azureml-setup/Invocation.sh` in the background.
Until that POST the job is NotStarted, as in Azure where the client starts it. The emulator runs the job itself, on
a capacity it keeps for the workspace: a cluster the user never sees, sized by the machine (no VM size, no quota,
no cost), scaling from zero.
"""

import io
import json
import stat
import urllib.parse
import zipfile

from emulator.domain.compute import kubernetes, serverless, vm_sizes
from emulator.errors import ValidationFailed

FLAG = "IsLocal"  # resources.properties.IsLocal = {"IsLocal": true}, the SDK's mark of a local job
FAKE = "&fake="  # azure-ai-ml's EXECUTION_SERVICE_URL_KEY
SERVICE = "Local"
# The emulator's own key in the stored body: the job waits for its client's call to the Execution Service.
AWAITING = "amlemuAwaitingLocalRun"
# Compute names never hold a '.' (names.compute_name): no compute a user makes can be taken for it.
PREFIX = "local."
CLUSTER_NAME = f"{PREFIX}machine"
SIZE_NAME = "Local"
IDLE_BEFORE_SCALE_DOWN = "PT2M"
SCRIPT = "azureml-setup/Invocation.sh"
INVOCATION = """#!/bin/bash
# amlemu: this job runs in a container on the machine the emulator runs on, started when this client asked
# the emulator's Execution Service for it. Nothing is left to do here: follow it with ml_client.jobs.stream({name!r}).
exit 0
"""
REFUSED = ("Local compute runs command jobs submitted on their own (command(..., compute=\"local\")); {what} need a "
           "compute cluster or serverless compute: name a cluster, or none.")


def is_local(resources: dict) -> bool:
    """Whether a job's `resources` mark it local (the SDK's IsLocal property)."""
    props = resources.get("properties")
    mark = props.get(FLAG) if isinstance(props, dict) else None
    return bool(mark.get(FLAG)) if isinstance(mark, dict) else bool(mark)


def is_local_compute(compute_name: str) -> bool:
    return compute_name.startswith(PREFIX)


def is_hidden(compute_name: str) -> bool:
    """A compute the emulator keeps for jobs, which no compute route shows (serverless or local capacity, or an
    attached Kubernetes compute's on the local runtime)."""
    return serverless.is_serverless(compute_name) or is_local_compute(compute_name) or kubernetes.is_fallback(compute_name)


def unmetered(compute_name: str) -> bool:
    """Capacity no Azure quota, capacity shortage or price holds: the emulator's machine (local compute), and attached
    Kubernetes compute run on it (the user's own cluster, which Azure neither limits by quota nor bills)."""
    return is_local_compute(compute_name) or kubernetes.is_fallback(compute_name)


def is_local_name(compute_id: str) -> bool:
    """A computeId naming "local": what the SDK sends for a sweep's or a pipeline step's local compute."""
    return compute_id.rstrip("/").rsplit("/", 1)[-1].lower() == "local"


def check(instance_count: int, distribution: dict | None, target: str) -> None:
    """A local run is one process on one machine (Azure's local runs are)."""
    if instance_count != 1:
        raise ValidationFailed(f"A local job runs on one machine: {target}.resources.instanceCount must be 1, got "
                               f"{instance_count}. Use a compute cluster for multi-node jobs.",
                               target=f"{target}.resources.instanceCount")
    if distribution is not None:
        raise ValidationFailed("A local job runs one process: it takes no distribution. Use a compute cluster for "
                               "distributed jobs.", target=f"{target}.distribution")


def machine_size(vcpus: int, memory_gb: float) -> vm_sizes.VmSize:
    """The machine the emulator runs on, as the size its local capacity's nodes have."""
    return vm_sizes.VmSize(name=SIZE_NAME, family="local", vcpus=max(1, vcpus), memory_gb=max(0.5, memory_gb),
                           gpus=0, os_vhd_size_mb=0, max_resource_volume_mb=0, low_priority_capable=False,
                           premium_io=False, supported_compute_types=())


def size_of(props: dict) -> vm_sizes.VmSize:
    """The size stored in the hidden cluster's body (`cluster_body`)."""
    machine = props.get("machine") or {}
    return machine_size(int(machine.get("vCPUs", 1)), float(machine.get("memoryGB", 1.0)))


def cluster_body(location: str, vcpus: int, memory_gb: float) -> dict:
    """The hidden cluster, as if it had been PUT: as many one-job nodes as the machine has cores, from zero."""
    size = machine_size(vcpus, memory_gb)
    return {"location": location, "tags": {}, "identity": None,
            "properties": {"computeType": "AmlCompute", "description": "local compute (the emulator's machine)",
                           "disableLocalAuth": True,
                           "properties": {"vmSize": SIZE_NAME, "vmPriority": "Dedicated", "osType": "Linux",
                                          "machine": {"vCPUs": size.vcpus, "memoryGB": size.memory_gb},
                                          "scaleSettings": {"minNodeCount": 0, "maxNodeCount": size.vcpus,
                                                            "nodeIdleTimeBeforeScaleDown": IDLE_BEFORE_SCALE_DOWN}}}}


def execution_body(job_name: str, experiment: str, snapshot_id: str | None) -> dict:
    """What the client POSTs to the Execution Service (the SDK reads `SnapshotId` from it)."""
    body = {"RunId": job_name, "ExperimentName": experiment}
    return {**body, "SnapshotId": snapshot_id} if snapshot_id else body


def service_endpoint(execution_url: str, body: dict) -> str:
    return execution_url + FAKE + urllib.parse.quote_plus(json.dumps(body, separators=(",", ":")))


def run_of(body: object) -> str:
    """The job a POST to the Execution Service starts (its RunId)."""
    run = body.get("RunId") if isinstance(body, dict) else None
    if not isinstance(run, str) or not run:
        raise ValidationFailed("RunId is required: the job to start, as the job's services.Local endpoint gives it.",
                               target="RunId")
    return run


def invocation_zip(job_name: str) -> bytes:
    """The Execution Service's answer: one file, `azureml-setup/Invocation.sh`, that says what happens and does
    nothing (no other path, so nothing unzips outside the client's folder)."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        entry = zipfile.ZipInfo(SCRIPT, date_time=(1980, 1, 1, 0, 0, 0))
        entry.external_attr = (stat.S_IFREG | 0o755) << 16
        archive.writestr(entry, INVOCATION.format(name=job_name))
    return buffer.getvalue()
