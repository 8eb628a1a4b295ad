"""Batch endpoints and their deployments: checked against the workspace (its clusters, models, code, environments,
components) and stored. Nothing runs until an invocation (services/batch_invoke.py), so creates, updates and
deletes finish at once; their long-running operations are done by the time the SDK polls them."""

from datetime import datetime

from emulator.domain.assets.components import PIPELINE
from emulator.domain.ids import WorkspaceRef
from emulator.domain.serving import batch_deployments as rules
from emulator.domain.serving import batch_endpoints as endpoint_rules
from emulator.domain.serving.deployments import AssetRef
from emulator.domain.serving.endpoints import deployment_name
from emulator.errors import Conflict, NotFound, ValidationFailed
from emulator.services import components, computes, endpoints, environment_refs, operations
from emulator.settings import Settings
from emulator.store.repositories import Repository
from emulator.store.tables import AssetVersion, BatchDeployment, BatchEndpoint, Compute, Operation, Workspace

P = rules.P
KIND = "batchEndpoints"


def get_endpoint(repo: Repository, ref: WorkspaceRef, name: str) -> BatchEndpoint:
    row = repo.batch_endpoint(ref.child_id(KIND, name))
    if row is None:
        raise NotFound(f"Batch endpoint '{name}' was not found in workspace '{ref.name}'.", target="endpointName")
    return row


def _finished(repo: Repository, key: str, action: str, now: datetime) -> Operation:
    op = operations.start(repo, key, action, now)
    operations.finish(repo, key, now)
    return op


def put_endpoint(repo: Repository, ref: WorkspaceRef, workspace: Workspace, name: str, body: object,
                 now: datetime) -> tuple[BatchEndpoint, Operation, bool]:
    key = ref.child_id(KIND, name).lower()
    row = repo.batch_endpoint(key)
    names = [d.name for d in repo.batch_deployments(key)] if row else []
    stored = endpoint_rules.validated(body, name, workspace.location, names)
    if row is None:
        row = BatchEndpoint(key=key, workspace_key=ref.key, name=name, location=stored["location"], body=stored,
                            provisioning_state="Succeeded", created_at=now, modified_at=now)
        repo.add(row)
        return row, _finished(repo, key, "Create", now), True
    row.body, row.modified_at = stored, now
    return row, _finished(repo, key, "Update", now), False


def delete_endpoint(repo: Repository, ref: WorkspaceRef, name: str,
                    now: datetime) -> tuple[BatchEndpoint, Operation] | None:
    """Its deployments go with it; the jobs it made stay, as any job does."""
    row = repo.batch_endpoint(ref.child_id(KIND, name))
    if row is None:
        return None
    for deployment in repo.batch_deployments(row.key):
        repo.remove(deployment)
    repo.remove(row)
    return row, _finished(repo, row.key, "Delete", now)


# ---------------------------------------------------------------- deployments

def get_deployment(repo: Repository, ref: WorkspaceRef, endpoint: str, name: str) -> BatchDeployment:
    parent = get_endpoint(repo, ref, endpoint)
    row = repo.batch_deployment(f"{parent.key}/deployments/{name}")
    if row is None:
        raise NotFound(f"Deployment '{name}' was not found in batch endpoint '{endpoint}'.", target="deploymentName")
    return row


def cluster(repo: Repository, ref: WorkspaceRef, name: str, target: str) -> Compute:
    """The compute cluster a deployment (or its job) runs on: it must be an AmlCompute of the workspace."""
    row = repo.compute(ref.child_id("computes", name))
    if row is None or row.provisioning_state == "Deleting":
        raise ValidationFailed(f"Compute '{name}' was not found in workspace '{ref.name}': a batch deployment runs on "
                               "a compute cluster of its workspace (create one with AmlCompute).", target=target)
    if row.compute_type != "AmlCompute":
        raise ValidationFailed(f"Compute '{name}' is a {row.compute_type}: batch deployments run on compute clusters "
                               "(AmlCompute).", target=target)
    return row


def _check_model(repo: Repository, settings: Settings, ref: WorkspaceRef, stored: dict, now: datetime) -> None:
    props, refs = stored[P], stored["refs"]
    target = f"{P}.resources.instanceCount"
    found = cluster(repo, ref, refs["compute"], f"{P}.compute")
    most = computes.spec_of(found).scale.max_nodes
    if props["resources"]["instanceCount"] > most:
        raise ValidationFailed(f"The deployment asks for {props['resources']['instanceCount']} instances but cluster "
                               f"'{found.name}' has at most {most} (maxNodeCount).", target=target)
    props["compute"] = f"{ref.arm_id}/computes/{found.name}"
    model = endpoints.find_asset(repo, ref, AssetRef(**refs["model"]), f"{P}.model.assetId")
    refs["model"]["version"] = model.version  # a registry's label means the version it names now, as in Azure
    if not (settings.data_dir / endpoints.model_path(ref, model)).exists():
        raise ValidationFailed(f"The files of model '{model.name}' version '{model.version}' are not in the blob "
                               "store.", target=f"{P}.model.assetId")
    if refs["code"] is None:
        _check_mlflow(model)
        return
    environment_refs.in_workspace(repo, ref, props["environmentId"], f"{P}.environmentId", now)
    code = endpoints.find_asset(repo, ref, AssetRef(**refs["code"]), f"{P}.codeConfiguration.codeId")
    script = props["codeConfiguration"]["scoringScript"]
    if not (settings.data_dir / endpoints.code_dir(ref, code) / script).is_file():
        raise ValidationFailed(f"The scoring script '{script}' is not in code '{code.name}' version "
                               f"'{code.version}'.", target=f"{P}.codeConfiguration.scoringScript")


def _check_mlflow(model: AssetVersion) -> None:
    if model.body.get("modelType") != "mlflow_model":
        raise ValidationFailed(f"Model '{model.name}' version '{model.version}' is a "
                               f"{model.body.get('modelType') or 'custom_model'}: without a scoring script "
                               "(codeConfiguration) only an MLflow model can be deployed. Give code_configuration "
                               "and an environment.", target=f"{P}.codeConfiguration")


def _check_pipeline(repo: Repository, ref: WorkspaceRef, stored: dict) -> None:
    target = f"{P}.deploymentConfiguration"
    config = stored[P]["deploymentConfiguration"]
    found = components.resolve(repo, ref, config["componentId"]["assetId"], f"{target}.componentId.assetId")
    if found.spec.kind != PIPELINE:
        raise ValidationFailed(f"Component '{found.row.name}' version '{found.row.version}' is a {found.spec.kind} "
                               "component: a pipeline component deployment deploys a pipeline component (type: "
                               "pipeline); deploy a model with ModelBatchDeployment, or wrap the step in a pipeline "
                               "component.", target=f"{target}.componentId.assetId")
    config["componentId"]["assetId"] = found.id
    if stored["refs"]["compute"]:
        cluster(repo, ref, stored["refs"]["compute"], f"{target}.settings.default_compute")


def put_deployment(repo: Repository, settings: Settings, ref: WorkspaceRef, endpoint: str, name: str,
                   body: object, now: datetime) -> tuple[BatchDeployment, Operation, bool]:
    parent = get_endpoint(repo, ref, endpoint)
    deployment_name(name)
    stored = rules.validated(body)
    stored["location"] = stored["location"] or parent.location
    if stored["kind"] == rules.MODEL:
        _check_model(repo, settings, ref, stored, now)
    else:
        _check_pipeline(repo, ref, stored)
    key = f"{parent.key}/deployments/{name}".lower()
    row = repo.batch_deployment(key)
    if row is None:
        row = BatchDeployment(key=key, endpoint_key=parent.key, name=name, body=stored,
                              provisioning_state="Succeeded", created_at=now, modified_at=now)
        repo.add(row)
        return row, _finished(repo, key, "Create", now), True
    if row.body["kind"] != stored["kind"]:
        raise Conflict(f"Deployment '{name}' is a {row.body['kind']} deployment; it cannot become a "
                       f"{stored['kind']} one. Delete it first, or use another name.", target="deploymentName")
    row.body, row.modified_at = stored, now
    return row, _finished(repo, key, "Update", now), False


def delete_deployment(repo: Repository, ref: WorkspaceRef, endpoint: str, name: str,
                      now: datetime) -> tuple[BatchDeployment, Operation] | None:
    parent = get_endpoint(repo, ref, endpoint)
    row = repo.batch_deployment(f"{parent.key}/deployments/{name}")
    if row is None:
        return None
    if (endpoint_rules.default_deployment(parent.body) or "").lower() == row.name.lower():
        raise Conflict(f"Deployment '{row.name}' is the default deployment of batch endpoint '{parent.name}': set "
                       f"another default ({endpoint_rules.DEFAULTS}) before deleting it.",
                       target=endpoint_rules.DEFAULTS)
    repo.remove(row)
    return row, _finished(repo, row.key, "Delete", now)
