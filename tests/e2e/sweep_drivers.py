"""How the read-back sweep drives each operation of tests/sdk_surface.py through the real SDK: one function per
(group, operation), returning what the SDK handed back (walked by the sweep). Names are the sweep's own, so it
can run beside the other end-to-end tests of a stack."""

import os
from dataclasses import dataclass, field
from pathlib import Path

from azure.ai.ml import Input, MLClient, Output, command
from azure.ai.ml._artifacts._artifact_utilities import download_artifact_from_aml_uri
from azure.ai.ml.entities import (
    AmlCompute,
    AzureBlobDatastore,
    BatchEndpoint,
    BatchRetrySettings,
    CodeConfiguration,
    CommandComponent,
    ComputeInstance,
    CronTrigger,
    Data,
    Environment,
    JobSchedule,
    ManagedOnlineDeployment,
    ManagedOnlineEndpoint,
    Model,
    ModelBatchDeployment,
    ModelBatchDeploymentSettings,
    PatTokenConfiguration,
    Registry,
    RegistryRegionDetails,
    Workspace,
    WorkspaceConnection,
)
from azure.ai.ml.entities._assets import Code

IMAGE = "python:3.11-slim"
SCORE = "def init():\n    pass\n\n\ndef run(raw):\n    return raw\n"


@dataclass
class Sweep:
    ml: MLClient
    work: Path
    suffix: str
    made: dict = field(default_factory=dict)

    def name(self, kind: str) -> str:
        if kind == "component":  # a component's name is an identifier: lower-case letters, digits and '_'
            return f"rb_component_{self.suffix}"
        return f"rb-{kind}-{self.suffix}"

    @property
    def source(self) -> Path:
        folder = self.work / "src"
        if not folder.is_dir():
            folder.mkdir(parents=True)
            (folder / "score.py").write_text(SCORE)
            (folder / "weights.bin").write_bytes(os.urandom(2048))
        return folder


def _files(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def _same_files(downloaded: Path, source: Path) -> None:
    assert _files(downloaded) == _files(source), (sorted(_files(downloaded)), sorted(_files(source)))


# workspaces
def ws_create(s: Sweep):
    return s.ml.workspaces.begin_create(Workspace(name=s.name("ws"), location="westeurope")).result()


def ws_get(s: Sweep):
    return [s.ml.workspaces.get(s.name("ws")), s.ml.workspaces.get()]


def ws_update(s: Sweep):
    workspace = s.ml.workspaces.get(s.name("ws"))
    workspace.description = "read back"
    updated = s.ml.workspaces.begin_update(workspace).result()
    assert updated.description == "read back"
    return updated


def ws_delete(s: Sweep):
    return s.ml.workspaces.begin_delete(s.name("ws"), delete_dependent_resources=False).result()


# compute: a cluster at zero nodes and an instance (a container), both read back
def compute_create(s: Sweep):
    return [s.ml.compute.begin_create_or_update(AmlCompute(
                name=s.name("cpu")[:24], size="Standard_DS3_v2", min_instances=0, max_instances=1,
                idle_time_before_scale_down=5)).result(),
            s.ml.compute.begin_create_or_update(ComputeInstance(
                name=s.name("ci")[:24], size="Standard_DS3_v2")).result()]


def _instance_action(action: str):
    def act(s: Sweep):
        getattr(s.ml.compute, f"begin_{action}")(s.name("ci")[:24]).result()
        return s.ml.compute.get(s.name("ci")[:24])
    return act


def compute_delete(s: Sweep):
    for name in (s.name("cpu")[:24], s.name("ci")[:24]):
        s.ml.compute.begin_delete(name).result()


def compute_update(s: Sweep):
    cluster = s.ml.compute.get(s.name("cpu")[:24])
    cluster.max_instances = 2
    updated = s.ml.compute.begin_update(cluster).result()
    assert updated.max_instances == 2
    return updated


# code
def code_create(s: Sweep):
    return s.ml._code.create_or_update(Code(name=s.name("code"), version="1", path=str(s.source)))


def code_download(s: Sweep):
    target = s.work / "code-down"
    s.ml._code.download(s.name("code"), "1", target)
    _same_files(target, s.source)


# environments, models, data: versioned assets alike
def env_create(s: Sweep):
    return s.ml.environments.create_or_update(Environment(name=s.name("env"), version="1", image=IMAGE))


def model_create(s: Sweep):
    return s.ml.models.create_or_update(Model(name=s.name("model"), version="1", path=str(s.source)))


def model_download(s: Sweep):
    s.ml.models.download(s.name("model"), "1", download_path=str(s.work / "model-down"))
    _same_files(s.work / "model-down" / s.name("model") / "src", s.source)


def data_create(s: Sweep):
    return s.ml.data.create_or_update(Data(name=s.name("data"), version="1", type="uri_folder", path=str(s.source)))


def data_get(s: Sweep):
    data = s.ml.data.get(s.name("data"), version="1")
    download_artifact_from_aml_uri(data.path, str(s.work / "data-down"), s.ml.datastores)
    _same_files(s.work / "data-down", s.source)
    return data


def _versioned(group: str, kind: str) -> dict:
    def ops(s: Sweep):
        return getattr(s.ml, group)

    return {"get": lambda s: ops(s).get(s.name(kind), version="1"),
            "list": lambda s: [*ops(s).list(), *ops(s).list(name=s.name(kind))],
            "archive": lambda s: ops(s).archive(s.name(kind), version="1"),
            "restore": lambda s: ops(s).restore(s.name(kind), version="1")}


# components: names are lower-case identifiers, so the sweep's suffix joins with '_'
def component_create(s: Sweep):
    env_create(s)  # the environment group's version, made again (the same) when this group runs alone
    return s.ml.components.create_or_update(CommandComponent(
        name=s.name("component"), version="1", command="python score.py --n ${{inputs.n}}",
        inputs={"n": Input(type="integer", default=3, min=1)}, outputs={"scored": Output(type="uri_folder")},
        code=str(s.source), environment=f"azureml:{s.name('env')}:1", display_name="read-back sweep"))


# jobs: one that writes outputs (read back whole), one canceled before it runs
def job_create(s: Sweep):
    job = s.ml.jobs.create_or_update(command(
        command="echo read back > ./outputs/plain.txt && echo named > ${{outputs.result}}/named.txt",
        outputs={"result": Output(type="uri_folder")}, environment=Environment(image=IMAGE),
        code=str(s.source), display_name="read-back sweep"))
    s.made["job"] = job.name
    return job


def _a_job(s: Sweep) -> str:
    """The sweep's job (made now when the schedules group runs alone)."""
    return s.made.get("job") or job_create(s).name


def job_stream(s: Sweep):
    s.ml.jobs.stream(s.made["job"])
    job = s.ml.jobs.get(s.made["job"])
    assert job.status == "Completed", job.status
    return job


def job_download(s: Sweep):
    target = s.work / "job-down"
    s.ml.jobs.download(s.made["job"], download_path=str(target), all=True)
    assert (target / "artifacts" / "outputs" / "plain.txt").read_text().strip() == "read back"
    assert (target / "named-outputs" / "result" / "named.txt").read_text().strip() == "named"


def job_cancel(s: Sweep):
    job = s.ml.jobs.create_or_update(command(command="sleep 600", environment=Environment(image=IMAGE)))
    s.ml.jobs.begin_cancel(job.name).result()
    canceled = s.ml.jobs.get(job.name)
    assert canceled.status in ("CancelRequested", "Canceled"), canceled.status
    return canceled


# online endpoints and deployments (the deployment is read back while it comes up, then deleted)
def endpoint_create(s: Sweep, kind: str = "ep"):
    return s.ml.online_endpoints.begin_create_or_update(
        ManagedOnlineEndpoint(name=s.name(kind)[:32], auth_mode="key")).result()


def deployment_create(s: Sweep):
    endpoint_create(s, "dep")
    s.ml.online_deployments.begin_create_or_update(ManagedOnlineDeployment(
        name="blue", endpoint_name=s.name("dep")[:32], model=Model(path=str(s.source)),
        code_configuration=CodeConfiguration(code=str(s.source), scoring_script="score.py"),
        environment=Environment(image=IMAGE), instance_type="Standard_DS2_v2", instance_count=1))
    return s.ml.online_deployments.get("blue", s.name("dep")[:32])


def deployment_delete(s: Sweep):
    s.ml.online_deployments.begin_delete("blue", s.name("dep")[:32]).result()
    s.ml.online_endpoints.begin_delete(s.name("dep")[:32]).result()


# batch endpoints: a deployment on a cluster of its own (the compute group deletes the sweep's), invoked once
def batch_deployment_create(s: Sweep):
    cluster = s.name("bcpu")[:24]
    s.ml.compute.begin_create_or_update(AmlCompute(name=cluster, size="Standard_DS3_v2", min_instances=0,
                                                   max_instances=1, idle_time_before_scale_down=5)).result()
    return s.ml.batch_deployments.begin_create_or_update(ModelBatchDeployment(
        name="blue", endpoint_name=_endpoint(s, "batch"), model=Model(path=str(s.source)),
        code_configuration=CodeConfiguration(code=str(s.source), scoring_script="score.py"),
        environment=Environment(image=IMAGE), compute=cluster,
        settings=ModelBatchDeploymentSettings(mini_batch_size=1, retry_settings=BatchRetrySettings(max_retries=1)))
    ).result()


def batch_invoke(s: Sweep):
    endpoint = s.ml.batch_endpoints.get(_endpoint(s, "batch"))
    endpoint.defaults.deployment_name = "blue"
    s.ml.batch_endpoints.begin_create_or_update(endpoint).result()
    # named every time: azure-ai-ml 1.35 keeps the last deployment_name any invoke in this process gave
    job = s.ml.batch_endpoints.invoke(endpoint_name=_endpoint(s, "batch"), deployment_name="blue",
                                      input=Input(type="uri_folder", path=str(s.source)))
    s.made["batch_job"] = job.name
    return [job, s.ml.jobs.get(job.name)]


def batch_delete(s: Sweep):
    s.ml.batch_deployments.begin_delete("blue", _endpoint(s, "batch")).result()
    s.ml.batch_endpoints.begin_delete(_endpoint(s, "batch")).result()
    s.ml.compute.begin_delete(s.name("bcpu")[:24]).result()


def _workspace_id(s: Sweep) -> str:
    return (f"/subscriptions/{s.ml.subscription_id}/resourceGroups/{s.ml.resource_group_name}"
            f"/providers/Microsoft.MachineLearningServices/workspaces/{s.ml.workspace_name}")


def _endpoint(s: Sweep, kind: str = "ep") -> str:
    return s.name(kind)[:32]


DRIVERS = {
    "workspaces": {"begin_create": ws_create, "get": ws_get, "list": lambda s: list(s.ml.workspaces.list()),
                   "begin_update": ws_update, "begin_delete": ws_delete,
                   "get_keys": lambda s: s.ml.workspaces.get_keys(),
                   "begin_sync_keys": lambda s: s.ml.workspaces.begin_sync_keys(s.ml.workspace_name).result(),
                   "begin_diagnose": lambda s: s.ml.workspaces.begin_diagnose(s.ml.workspace_name).result(),
                   "begin_provision_network": lambda s: s.ml.workspaces.begin_provision_network(
                       workspace_name=s.ml.workspace_name).result()},
    "compute": {"begin_create_or_update": compute_create,
                "get": lambda s: [s.ml.compute.get(s.name("cpu")[:24]), s.ml.compute.get(s.name("ci")[:24])],
                "begin_stop": _instance_action("stop"), "begin_start": _instance_action("start"),
                "begin_restart": _instance_action("restart"),
                "list": lambda s: list(s.ml.compute.list()),
                "list_nodes": lambda s: list(s.ml.compute.list_nodes(s.name("cpu")[:24])),
                "list_sizes": lambda s: list(s.ml.compute.list_sizes()),
                "list_usage": lambda s: list(s.ml.compute.list_usage()), "begin_update": compute_update,
                "begin_delete": compute_delete,
                "enable_sso": lambda s: s.ml.compute.enable_sso(name=s.name("cpu")[:24], enable_sso=True)},
    "_code": {"create_or_update": code_create, "get": lambda s: s.ml._code.get(s.name("code"), "1"),
              "download": code_download},
    "environments": {"create_or_update": env_create, **_versioned("environments", "env")},
    "jobs": {"create_or_update": job_create, "get": lambda s: s.ml.jobs.get(s.made["job"]),
             "list": lambda s: list(s.ml.jobs.list()), "stream": job_stream, "download": job_download,
             "begin_cancel": job_cancel},
    "models": {"create_or_update": model_create, **_versioned("models", "model"), "download": model_download},
    "data": {"create_or_update": data_create, **_versioned("data", "data"), "get": data_get},
    "datastores": {"get": lambda s: s.ml.datastores.get("workspaceblobstore"),
                   "get_default": lambda s: s.ml.datastores.get_default(),
                   "list": lambda s: list(s.ml.datastores.list()),
                   "create_or_update": lambda s: s.ml.datastores.create_or_update(AzureBlobDatastore(
                       name="rbextra", account_name="rbaccount", container_name="rbcontainer")),
                   "delete": lambda s: s.ml.datastores.delete("rbextra")},
    "online_endpoints": {"begin_create_or_update": endpoint_create,
                         "get": lambda s: s.ml.online_endpoints.get(_endpoint(s)),
                         "list": lambda s: list(s.ml.online_endpoints.list()),
                         "get_keys": lambda s: s.ml.online_endpoints.get_keys(_endpoint(s)),
                         "begin_delete": lambda s: s.ml.online_endpoints.begin_delete(_endpoint(s)).result()},
    "online_deployments": {"begin_create_or_update": deployment_create,
                           "get": lambda s: s.ml.online_deployments.get("blue", _endpoint(s, "dep")),
                           "list": lambda s: list(s.ml.online_deployments.list(_endpoint(s, "dep"))),
                           "get_logs": lambda s: s.ml.online_deployments.get_logs("blue", _endpoint(s, "dep"), 20),
                           "begin_delete": deployment_delete},
    "components": {"create_or_update": component_create, **_versioned("components", "component")},
    "batch_endpoints": {"begin_create_or_update": lambda s: [s.ml.batch_endpoints.begin_create_or_update(
                            BatchEndpoint(name=_endpoint(s, "batch"))).result(), batch_deployment_create(s)],
                        "get": lambda s: s.ml.batch_endpoints.get(_endpoint(s, "batch")),
                        "list": lambda s: list(s.ml.batch_endpoints.list()),
                        "invoke": batch_invoke,
                        "list_jobs": lambda s: list(s.ml.batch_endpoints.list_jobs(_endpoint(s, "batch"))),
                        "begin_delete": lambda s: s.ml.batch_endpoints.begin_delete(_endpoint(s, "batch")).result()},
    "batch_deployments": {"begin_create_or_update": lambda s: [s.ml.batch_endpoints.begin_create_or_update(
                              BatchEndpoint(name=_endpoint(s, "batch"))).result(), batch_deployment_create(s)],
                          "get": lambda s: s.ml.batch_deployments.get("blue", _endpoint(s, "batch")),
                          "list": lambda s: list(s.ml.batch_deployments.list(_endpoint(s, "batch"))),
                          "list_jobs": lambda s: list(s.ml.batch_deployments.list_jobs(_endpoint(s, "batch"),
                                                                                       name="blue")),
                          "begin_delete": batch_delete},
    "registries": {"begin_create": lambda s: s.ml.registries.begin_create(Registry(
                       name=s.name("reg"), location="westeurope",
                       replication_locations=[RegistryRegionDetails(location="westeurope")])).result(),
                   "get": lambda s: s.ml.registries.get(s.name("reg")),
                   "list": lambda s: list(s.ml.registries.list()),
                   "begin_delete": lambda s: s.ml.registries.begin_delete(name=s.name("reg")).result()},
    "schedules": {"begin_create_or_update": lambda s: s.ml.schedules.begin_create_or_update(JobSchedule(
                      name=s.name("sched"), trigger=CronTrigger(expression="0 0 * * *"),
                      create_job=f"{_workspace_id(s)}/jobs/{_a_job(s)}")).result(),
                  "get": lambda s: s.ml.schedules.get(s.name("sched")),
                  "list": lambda s: list(s.ml.schedules.list()),
                  "begin_disable": lambda s: s.ml.schedules.begin_disable(s.name("sched")).result(),
                  "begin_enable": lambda s: s.ml.schedules.begin_enable(s.name("sched")).result(),
                  "begin_delete": lambda s: s.ml.schedules.begin_delete(s.name("sched")).result()},
    "connections": {"create_or_update": lambda s: s.ml.connections.create_or_update(WorkspaceConnection(
                        name=s.name("conn"), type="git", target="https://git.example/repo.git",
                        credentials=PatTokenConfiguration(pat="not-a-secret"))),
                    "get": lambda s: s.ml.connections.get(s.name("conn")),
                    "list": lambda s: list(s.ml.connections.list()),
                    "delete": lambda s: s.ml.connections.delete(s.name("conn"))},
    "serverless_endpoints": {"get": lambda s: s.ml.serverless_endpoints.get(s.name("sls")),
                             "list": lambda s: list(s.ml.serverless_endpoints.list())},
    "marketplace_subscriptions": {"list": lambda s: list(s.ml.marketplace_subscriptions.list())},
    "capability_hosts": {"get": lambda s: s.ml.capability_hosts.get(s.name("host"))},
    "feature_sets": {"get": lambda s: s.ml.feature_sets.get(s.name("fset"), version="1"),
                     "list": lambda s: list(s.ml.feature_sets.list())},
    "feature_store_entities": {"list": lambda s: list(s.ml.feature_store_entities.list())},
    "indexes": {"get": lambda s: s.ml.indexes.get(s.name("index"), version="1"),
                "list": lambda s: list(s.ml.indexes.list())},
    "workspace_outbound_rules": {"list": lambda s: list(s.ml.workspace_outbound_rules.list(
        workspace_name=s.ml.workspace_name))},
}
