"""Turns a Queued job into the ranks nodes run: image, command with its placeholders resolved, mounts,
environment, and the VM size's limits. No I/O: the node lays out the directories named here.

Where things live, relative to the data directory (the blob store serves the same files to the SDK):
- the job's artifacts (`jobs.download` brings them back as `artifacts/`):
  blobs/<account>/azureml/ExperimentRun/dcid.<job>/{outputs,logs,user_logs/std_log.txt}
- named outputs: blobs/<account>/azureml-blobstore-<workspace id>/azureml/<job>/<output>/ by default
- each rank's working directory, a fresh copy of the code snapshot: jobs/<job tag>/<attempt>/<rank>/wd
"""

import urllib.parse
from pathlib import PurePosixPath

from emulator import in_job, pki
from emulator.dispatch import job_container
from emulator.dispatch.protocol import Attempt, Mount, job_tag
from emulator.domain.compute import vm_sizes
from emulator.domain.compute.cluster import ClusterSpec
from emulator.domain.ids import WorkspaceRef
from emulator.domain.jobs import artifacts, command_job, parallel, placeholders, tracking
from emulator.domain.storage import datastores
from emulator.errors import ValidationFailed
from emulator.runtime import labels
from emulator.settings import Settings

WD = "/mnt/azureml/wd"
INPUTS, OUTPUTS = "/mnt/azureml/inputs", "/mnt/azureml/outputs"
MASTER_PORT = "6105"  # the port Azure ML gives PyTorch's rendezvous
CA_BUNDLE = "/etc/amlemu/ca-bundle.pem"


def _inputs(ref: WorkspaceRef, props: dict, inputs: dict[str, dict],
            downloads_dir: str) -> tuple[dict[str, str], list[Mount], list[tuple[str, str]]]:
    """Each input's value in the command, its mount, and the copies download mode makes."""
    values, mounts, downloads = {}, [], []
    for name, entry in inputs.items():
        if entry["jobInputType"] == "literal":
            values[name] = entry["value"]
            continue
        uri = command_job.input_uri(props, name)  # a data asset's files, resolved when the job was submitted
        if entry.get("mode") == "Direct":  # the job reads the URI itself: nothing is mounted
            values[name] = uri
            continue
        source = artifacts.blob_dir(datastores.resolve_uri(ref, uri, f"{command_job.P}.inputs.{name}.uri"))
        target = f"{INPUTS}/{name}"
        if entry["jobInputType"] == "uri_file":
            target = f"{target}/{PurePosixPath(source).name}"
        copied = entry.get("mode") in command_job.DOWNLOADS
        if copied:  # its own copy, writable: what the job changes there never reaches the datastore
            downloads.append((source, f"{downloads_dir}/{name}"))
            if entry["jobInputType"] == "uri_file":
                source = f"{downloads_dir}/{name}/{PurePosixPath(source).name}"
            else:
                source = f"{downloads_dir}/{name}"
        mounts.append(Mount(source, target, read_only=not copied))
        values[name] = target
    return values, mounts, downloads


def _outputs(ref: WorkspaceRef, job_name: str, outputs: dict[str, dict]) -> tuple[dict[str, str], list[Mount]]:
    values, mounts = {}, []
    for name, entry in outputs.items():
        uri = artifacts.output_uri(job_name, name, entry)
        if entry.get("mode") == "Direct":  # the job writes to the URI itself: nothing is mounted
            values[name] = uri
            continue
        source = artifacts.blob_dir(datastores.resolve_uri(ref, uri, f"{command_job.P}.outputs.{name}.uri"))
        mounts.append(Mount(source, f"{OUTPUTS}/{name}"))
        values[name] = f"{OUTPUTS}/{name}" + (f"/{name}" if entry["jobOutputType"] == "uri_file" else "")
    return values, mounts


def _distribution_env(job_key: str, attempt: int, rank: int, world_size: int, stack: str) -> dict[str, str]:
    if world_size == 1:
        return {}
    return {"MASTER_ADDR": container_name(stack, job_key, attempt, 0), "MASTER_PORT": MASTER_PORT,
            "WORLD_SIZE": str(world_size), "RANK": str(rank), "NODE_RANK": str(rank), "LOCAL_RANK": "0",
            "LOCAL_WORLD_SIZE": "1", "GROUP_RANK": str(rank), "AZUREML_NODE_COUNT": str(world_size),
            "OMPI_COMM_WORLD_RANK": str(rank), "OMPI_COMM_WORLD_SIZE": str(world_size)}


def rank_workdir(tag: str, attempt: int, rank: int) -> str:
    """A rank's working directory in the data folder (its code snapshot, gate and exit status)."""
    return f"jobs/{tag}/{attempt}/{rank}/wd"


def container_name(stack: str, job_key: str, attempt: int, rank: int) -> str:
    """Unique per stack; ranks find rank 0 by this name on their workspace's jobs network."""
    return f"amlemu-{stack}-job-{job_tag(job_key)}-{attempt}-{rank}"


def gpu_plan(size: vm_sizes.VmSize, settings: Settings, host_has_gpus: bool) -> tuple[int, str | None]:
    """(GPUs to give, a note for the log). No GPUs on the host: simulate on CPU, or refuse, as set."""
    if size.gpus == 0 or host_has_gpus:
        return size.gpus, None
    if settings.gpu_mode == "refuse":
        raise ValidationFailed(f"{size.name} has {size.gpus} GPU(s) and this host has none; AMLEMU_GPU_MODE=refuse "
                               "stops the job. Set AMLEMU_GPU_MODE=simulate to run it on CPU.", target="computeId")
    return 0, (f"amlemu: {size.name} has {size.gpus} GPU(s) but this host has none; the job runs on CPU "
               "(AMLEMU_GPU_MODE=simulate).")


def tracking_env(ref: WorkspaceRef, job_name: str, experiment: str, settings: Settings, token: str,
                 remote: bool = False) -> dict[str, str]:
    """What Azure ML sets for MLflow in a job (the azureml-mlflow plugin reads them): the job is its run. The api is
    `api` on the workspace's jobs network, under the emulator's CA, which the bundle carries beside the public roots;
    from another machine (`remote`), the address nodes there reach the api at (which the certificate names too)."""
    if not token:
        return {}
    host = urllib.parse.urlparse(settings.node_api_url).netloc if remote else \
        f"{settings.jobs_api_host}:{settings.listen_port}"
    return {"MLFLOW_TRACKING_URI": tracking.tracking_uri(host, ref.arm_id), "MLFLOW_TRACKING_TOKEN": token,
            "MLFLOW_RUN_ID": job_name, "MLFLOW_EXPERIMENT_NAME": experiment,
            "MLFLOW_EXPERIMENT_ID": tracking.experiment_guid(ref.key, experiment), "AZUREML_RUN_TOKEN": token,
            "AZUREML_SERVICE_ENDPOINT": f"https://{host}", "AZUREML_DISCOVERY_SERVICE_ENDPOINT": f"https://{host}/discovery",
            "REQUESTS_CA_BUNDLE": CA_BUNDLE, "SSL_CERT_FILE": CA_BUNDLE,
            "AZUREML_CURRENT_CLOUD": "AzureCloud"}  # else the plugin asks management.azure.com for its cloud


def limits(settings: Settings) -> dict:
    """The bounds a node holds a rank to, besides its VM size's CPUs and memory (Attempt's fields)."""
    return {"pids_limit": settings.job_pids_limit, "pids_sustain_seconds": settings.job_pids_sustain_seconds,
            "disk_limit_bytes": int(settings.job_disk_limit_gb * 2**30),
            "disk_check_seconds": settings.job_disk_check_seconds}


def ranks(job_key: str, job_name: str, attempt: int, props: dict, ref: WorkspaceRef, cluster: ClusterSpec,
          settings: Settings, image: str, notes: list[str], code_dir: str | None,
          host_has_gpus: bool, sandbox_pool: str | None = None, run_token: str = "",
          network: str | None = None, remote: bool = False) -> list[Attempt]:
    """`sandbox_pool`: the cluster's pool of network sandboxes, which a one-node job may borrow from; `network`:
    the network its ranks run on, when not the workspace's jobs network (nodes on attached hosts); `remote`: they
    run on another machine (an attached host, a Kubernetes cluster), which reaches the api at its nodes' address;
    `run_token`: the job's own token for its MLflow tracking."""
    spec = command_job.spec_of(props)
    input_values, _mounts, _downloads = _inputs(ref, props, spec.inputs, "")  # the values: the same for every rank
    output_values, output_mounts = _outputs(ref, job_name, spec.outputs)
    command = placeholders.resolve(spec.command, {"inputs": input_values, "outputs": output_values})
    gpus, gpu_note = gpu_plan(cluster.vm_size, settings, host_has_gpus)
    cpus, memory = vm_sizes.scaled_limits(cluster.vm_size, settings.resource_scale)
    job_dir = artifacts.directory(ref, job_name)
    world = spec.instance_count
    # the parallel runner, read-only, for a job that runs it (batch scoring, pipelines' parallel steps)
    runner = [Mount(in_job.INSTALLED, parallel.RUNNER_DIR, read_only=True)] if parallel.RUNNER in command else []
    base_env = {**spec.environment_variables,
                **{f"AZURE_ML_INPUT_{k}": v for k, v in input_values.items()},
                **{f"AZURE_ML_OUTPUT_{k}": v for k, v in output_values.items()},
                "AZUREML_RUN_ID": job_name, "AZUREML_ARM_SUBSCRIPTION": ref.subscription,
                "AZUREML_ARM_RESOURCEGROUP": ref.resource_group, "AZUREML_ARM_WORKSPACE_NAME": ref.name,
                "AZUREML_ARM_PROJECT_NAME": props.get("experimentName", command_job.DEFAULT_EXPERIMENT),
                "AZUREML_CR_EXECUTION_WORKING_DIR_PATH": WD, "PYTHONUNBUFFERED": "1", "HOME": "/tmp",
                "AMLEMU_JOB_ATTEMPT": str(attempt),  # a rerun's parallel runner claims its work afresh
                **tracking_env(ref, job_name, props.get("experimentName", command_job.DEFAULT_EXPERIMENT), settings,
                               run_token, remote)}
    result = []
    for rank in range(world):
        workdir = rank_workdir(job_tag(job_key), attempt, rank)
        _values, input_mounts, downloads = _inputs(ref, props, spec.inputs, job_container.downloads_dir(workdir))
        result.append(Attempt(
            job_key=job_key, job_name=job_name, attempt=attempt, rank=rank, world_size=world, image=image,
            command=command, env={**base_env, **_distribution_env(job_key, attempt, rank, world, settings.stack)},
            labels={labels.STACK: settings.stack, labels.ROLE: "job", labels.JOB: job_tag(job_key),
                    labels.JOB_NAME: job_name[:200], labels.ATTEMPT: str(attempt), labels.RANK: str(rank)},
            container_name=container_name(settings.stack, job_key, attempt, rank), cpus=cpus, memory_bytes=memory,
            gpus=gpus, network=network or settings.jobs_network(ref.key), user=settings.job_user,
            workdir=workdir, downloads=downloads,
            code_dir=code_dir, log_file=f"{job_dir}/{artifacts.log_name(rank, world)}",
            notes=[*notes, *([gpu_note] if gpu_note else [])],
            mounts=[Mount(f"{job_dir}/outputs", f"{WD}/outputs"), Mount(f"{job_dir}/logs", f"{WD}/logs"),
                    *input_mounts, *output_mounts, *runner,
                    *([Mount(pki.JOBS_BUNDLE, CA_BUNDLE, read_only=True)] if run_token else [])],
            make_dirs=[f"{job_dir}/outputs", f"{job_dir}/logs", f"{job_dir}/user_logs",
                       *(m.source for m in output_mounts)],
            # Ranks of a multi-node job find rank 0 by its container's name: each has a network of its own.
            sandbox_pool=sandbox_pool if world == 1 else None, **limits(settings)))
    return result
