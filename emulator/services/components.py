"""Component versions, in workspaces and registries: stored as the other asset versions are (services/assets), with
the code and the environment they name checked when they are made, and found again by the references pipelines and
jobs write (`resolve`)."""

from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from emulator.domain.assets import components as rules
from emulator.domain.assets import curated
from emulator.domain.ids import WorkspaceRef
from emulator.domain.jobs import pipeline, pipeline_graph, pipeline_steps
from emulator.domain.registries import ids as registry_ids
from emulator.errors import NotFound, ValidationFailed
from emulator.services import assets, environment_refs, registry_assets
from emulator.store.repositories import Repository
from emulator.store.tables import AssetVersion

COMPONENTS = assets.COMPONENTS


@dataclass(frozen=True)
class Resolved:
    id: str  # the version's id: an ARM id, or azureml://registries/<registry>/components/<name>/versions/<v>
    row: AssetVersion
    spec: rules.ComponentSpec


def resolve(repo: Repository, ref: WorkspaceRef, reference: str, target: str) -> Resolved:
    """The component version a pipeline step (or anything else in workspace `ref`) names: `azureml:<name>:<version>`,
    `azureml:<name>@latest`, the ARM id of a version or of `.../labels/latest` (what the SDK makes of those), or
    `azureml://registries/<registry>/components/<name>/versions/<v>` (or `/labels/latest`). A label means the newest
    version not archived. Anything unknown or malformed is a ValidationFailed naming `target`."""
    row = _find(repo, ref, COMPONENTS, rules.reference(reference, COMPONENTS, target), target)
    registry = registry_ids.owner_of(row.key)
    found_id = (registry.asset_id(COMPONENTS, row.name, row.version) if registry
                else f"{ref.arm_id}/{COMPONENTS}/{row.name}/versions/{row.version}")
    return Resolved(found_id, row, rules.spec_of(row.body))


def _find(repo: Repository, owner: assets.Owner, kind: str, named: rules.Reference, target: str) -> AssetVersion:
    if named.registry is not None:
        asked = registry_ids.AssetRef(named.registry, kind, named.name, named.version, named.label)
        return registry_assets.find(repo, asked, target)
    if not isinstance(owner, WorkspaceRef):
        raise ValidationFailed(f"{target}: a registry's component names {kind} of registries "
                               f"(azureml://registries/<registry>/{kind}/<name>/versions/<version>), not of a "
                               "workspace.", target=target)
    if named.workspace is not None and tuple(p.lower() for p in named.workspace) != (
            owner.subscription.lower(), owner.resource_group.lower(), owner.name.lower()):
        raise ValidationFailed(f"{target} names a {kind[:-1]} of workspace '{named.workspace[2]}' (resource group "
                               f"'{named.workspace[1]}'); it must be one of workspace '{owner.name}'.", target=target)
    try:
        if named.version is None:
            return assets.latest(repo, owner, kind, named.name)
        return assets.get(repo, owner, kind, named.name, named.version)
    except NotFound as exc:
        raise ValidationFailed(f"{target}: {exc.message}", target=target) from exc


def _code(repo: Repository, owner: assets.Owner, spec: dict) -> None:
    code, _, where = rules.runs_with(spec)
    if code is not None:
        _find(repo, owner, assets.CODES, rules.reference(code, assets.CODES, f"{where}.code"), f"{where}.code")


def _steps(repo: Repository, owner: assets.Owner, spec: dict) -> None:
    """A pipeline component's steps name components of its owner's that are not pipelines, and bind only ports that
    exist, without cycles (pipeline_graph's rules, said of the component's own fields)."""
    where = f"{rules.SPEC}.jobs"
    steps, found = rules.pipeline_steps(spec), {}
    for step, each in steps.items():
        target = f"{where}.{step}.componentId"
        row = _find(repo, owner, COMPONENTS, rules.reference(each.component_id, COMPONENTS, target), target)
        found[step] = rules.spec_of(row.body)
        if found[step].kind == rules.PIPELINE:
            raise ValidationFailed(f"{target} names pipeline component '{row.name}': a pipeline component's steps "
                                   "run command or parallel components.", target=target)
    try:
        pipeline_graph.upstream(pipeline_steps.graph_steps(steps, found), spec["inputs"], spec["outputs"])
    except ValidationFailed as exc:
        target = (exc.target or "").replace(pipeline.J, where, 1)
        raise ValidationFailed(exc.message.replace(pipeline.J, where), target=target or where) from exc


def _in_workspace(now: datetime) -> assets.Resolver:
    def check(repo: Repository, ref: WorkspaceRef, body: dict, _data_dir: Path | None) -> dict:
        spec = body["componentSpec"]
        if spec["type"].lower() == rules.PIPELINE:
            _steps(repo, ref, spec)
            return body
        _code(repo, ref, spec)
        _, environment, where = rules.runs_with(spec)
        environment_refs.in_workspace(repo, ref, environment, f"{where}.environment", now)
        return body
    return check


def _in_registry(repo: Repository, ref: registry_ids.RegistryRef, body: dict, _data_dir: Path | None) -> dict:
    """A registry's component runs in any workspace: its code and environment must be registries' too (Azure ML's
    curated environments included)."""
    spec = body["componentSpec"]
    if spec["type"].lower() == rules.PIPELINE:
        _steps(repo, ref, spec)
        return body
    _code(repo, ref, spec)
    _, environment, where = rules.runs_with(spec)
    target = f"{where}.environment"
    if curated.parse(environment, target) is None:
        if not registry_ids.is_asset_id(environment):
            raise ValidationFailed(f"{target}: a registry's component names an environment of a registry "
                                   "(azureml://registries/<registry>/environments/<name>/versions/<version>) or a "
                                   f"curated one, got {environment[:200]!r}.", target=target)
        registry_assets.find(repo, registry_ids.asset_ref(environment, assets.ENVIRONMENTS, target), target)
    return body


def put(repo: Repository, owner: assets.Owner, name: str, version: str, body: object, now: datetime,
        data_dir: Path | None = None) -> tuple[AssetVersion, bool]:
    """Create a version, or update what may change of an existing one (description, tags, archived)."""
    check = _in_workspace(now) if isinstance(owner, WorkspaceRef) else _in_registry
    return assets.put(repo, owner, COMPONENTS, name, version, body, now, data_dir, resolve=check)
