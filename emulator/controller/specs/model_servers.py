"""A model server's container: one instance of an online deployment."""

import secrets
from pathlib import Path, PurePosixPath

from emulator import confined
from emulator.domain.compute import vm_sizes
from emulator.domain.ids import WorkspaceRef
from emulator.domain.serving import deployments, model_server
from emulator.runtime import labels
from emulator.runtime.base import ContainerSpec
from emulator.services import endpoints
from emulator.settings import Settings
from emulator.store.tables import OnlineDeployment

ROLE = "model-server"


def logs_dir(settings: Settings, endpoint: str, deployment: str, make: bool = True) -> Path:
    """The deployment's log folder, where each model server writes its log."""
    folder = endpoints.logs_dir(settings, endpoint, deployment)
    if make:  # the model server runs as an unprivileged user and writes its log here
        confined.make_dir(settings.data_dir, folder.relative_to(settings.data_dir))
    return folder


def model_server_spec(settings: Settings, secret: bytes, row: OnlineDeployment, endpoint: str, ref: WorkspaceRef,
                      found: endpoints.Assets) -> ContainerSpec:
    """One instance of the deployment: the inference server on its environment's image, its code and model mounted
    read-only, reachable only on its workspace's scoring network and only with its key."""
    props = row.body["properties"]
    size = deployments.size_of(row.body)
    cpus, memory = vm_sizes.scaled_limits(size, settings.resource_scale)
    name = f"amlemu-{settings.stack}-serve-{endpoint}-{row.name}-{row.generation}-{secrets.token_hex(3)}"
    code, model = endpoints.code_dir(ref, found.code), endpoints.model_path(ref, found.model)
    for rel in (code, model):  # a link on the way (a job's output, say) would mount what it points at
        confined.source(settings.data_dir, rel)
    app_root = f"{model_server.APP_ROOT}/{PurePosixPath(code).name or 'code'}"
    model_dir = model_server.model_dir(found.model.name, found.model.version)
    logs = logs_dir(settings, endpoint, row.name).relative_to(settings.data_dir)
    host = settings.host_dir
    model_target = f"{model_dir}/{PurePosixPath(model).name}"
    checks = model_server.mount_checks({app_root: confined.identity(settings.data_dir, code),
                                   model_target: confined.identity(settings.data_dir, model)})
    env = {**props["environmentVariables"], model_server.KEY_ENV: model_server.server_key(secret, row.key),
           model_server.MOUNT_CHECKS_ENV: checks,
           "AZUREML_MODEL_DIR": model_dir, "AML_APP_ROOT": app_root,
           "AZUREML_ENTRY_SCRIPT": f"{app_root}/{props['codeConfiguration']['scoringScript']}",
           "AMLEMU_LOG_FILE": f"/var/azureml-logs/{name}.log", "HOME": "/tmp", "PYTHONUNBUFFERED": "1"}
    return ContainerSpec(
        name=name, image=row.image, command=[], entrypoint=[model_server.ENTRYPOINT],
        labels={labels.STACK: settings.stack, labels.ROLE: ROLE, labels.ENDPOINT: endpoint,
                labels.DEPLOYMENT: row.name, labels.DEPLOYMENT_ID: row.key,
                labels.WORKSPACE: ref.name, labels.GENERATION: str(row.generation)},
        env=env, cpus=cpus, memory_bytes=memory, network=settings.scoring_network(ref.key),
        mounts={str(host / code): app_root, str(host / model): model_target, str(host / logs): "/var/azureml-logs"},
        read_only=(app_root, model_target), user=settings.job_user, working_dir=app_root,
        drop_capabilities=True, pids_limit=settings.job_pids_limit)
