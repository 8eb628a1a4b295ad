"""Command, parallel and pipeline components: a version's body (properties.componentSpec, the SDK's YAML spelling of the
component) and the ways a pipeline, a job or another asset names one (a parallel component's own fields are checked by
domain/jobs/parallel_steps.py). Pure: whether the code and environment it names exist, the
service finds out (services/components.py).

The SDK registers a component as `PUT .../components/<name>/versions/<version>` with the spec it would write as
YAML; inline pipeline steps become anonymous components, `.../components/azureml_anonymous/versions/<hash of the
spec>` with `isAnonymous: true`, which a workspace keeps but does not list. `get(name)` asks for the version
`azureml_default`, which means the newest.
"""

import re
from dataclasses import dataclass

from emulator.domain import payload
from emulator.domain.assets import component_io, versioned
from emulator.domain.jobs import parallel_steps, pipeline, placeholders
from emulator.domain.registries import ids as registry_ids
from emulator.errors import ValidationFailed

SPEC = "properties.componentSpec"
ANONYMOUS_NAME = "azureml_anonymous"
DEFAULT_VERSION = "azureml_default"  # what the SDK's get(name) asks for: the newest version
LATEST = "latest"
COMMAND, PARALLEL, PIPELINE = "command", "parallel", "pipeline"
TYPES = (COMMAND, PARALLEL, PIPELINE)
DISTRIBUTIONS = ("pytorch", "mpi", "tensorflow", "ray")
# What a version may change once made: how it is described, and which client wrote it.
_MUTABLE = ("_source", "$schema", "description", "display_name", "tags")
# The docs' rule (the SDK checks it too): lower-case letters, digits and '_', starting with a letter.
_NAME = re.compile(r"^[a-z][a-z0-9_]{0,254}$")
_WORKSPACE_ID = (r"/subscriptions/(?P<sub>[^/]+)/resourcegroups/(?P<rg>[^/]+)/providers/"
                 r"microsoft\.machinelearningservices/workspaces/(?P<ws>[^/]+)/")
# The SDK resolves `azureml:<name>@latest` to an ARM id of a version but keeps the prefix on the name.
_TAIL = r"(?:azureml:)?(?P<name>[^/:@]+)/(?:versions/(?P<version>[^/]+)|labels/(?P<label>[^/]+))"
_SHORT = re.compile(r"^azureml:(?P<name>[^/:@]+)(?::(?P<version>[^/:@]+)|@(?P<label>[^/:@]+))$", re.IGNORECASE)


def name(value: str) -> str:
    if not _NAME.fullmatch(value):
        raise ValidationFailed(f"Invalid component name '{value}': 1 to 255 characters, lower-case letters, digits "
                               "and '_', starting with a lower-case letter.", target="name")
    return value


def _name_version(spec: dict, url_name: str, url_version: str, anonymous: bool) -> None:
    """A spec names the version it is PUT as. An anonymous one is stored under azureml_anonymous and its hash,
    whatever name (the step's component's, kept for display) and version its spec carries."""
    given = payload.string(spec.get("name"), f"{SPEC}.name")
    if given is not None and given != url_name and not anonymous:
        raise ValidationFailed(f"{SPEC}.name '{given}' differs from the name in the path, '{url_name}'.",
                               target=f"{SPEC}.name")
    version = spec.get("version")
    if version is not None and not anonymous and str(version) != url_version:
        raise ValidationFailed(f"{SPEC}.version '{version}' differs from the version in the path, '{url_version}'.",
                               target=f"{SPEC}.version")
    spec["name"], spec["version"] = given or url_name, url_version


def kind_of(spec: dict) -> str:
    kind = spec.get("type")
    if not isinstance(kind, str) or kind.lower() not in TYPES:
        raise ValidationFailed(f"{SPEC}.type must be 'command', 'parallel' or 'pipeline' (the components amlemu "
                               f"registers), got {kind!r}.", target=f"{SPEC}.type")
    return kind.lower()


def runs_with(spec: dict) -> tuple[str | None, str | None, str]:
    """(code, environment, where the spec holds them): a command component's own, a parallel one's task's; a
    pipeline component has neither (its steps' components have theirs)."""
    if spec.get("type", COMMAND).lower() == PIPELINE:
        return None, None, SPEC
    if spec.get("type", COMMAND).lower() == PARALLEL:
        return spec["task"].get("code"), spec["task"]["environment"], f"{SPEC}.task"
    return spec.get("code"), spec["environment"], SPEC


def _command(spec: dict) -> str:
    command = payload.required_string(spec.get("command"), f"{SPEC}.command")
    declared = {"inputs": spec.get("inputs") or {}, "outputs": spec.get("outputs") or {}}
    # Every reference must be declared, optional parts ($[[...]]) included: a job gives values, a component names.
    unknown = sorted(f"${{{{{group}.{ref}}}}}" for group, ref in placeholders.references(command)
                     if ref not in declared[group])
    if unknown:
        raise ValidationFailed(f"{SPEC}.command refers to {', '.join(unknown)}, which the component does not "
                               "declare.", target=f"{SPEC}.command")
    return command


def _resources(value: object) -> dict:
    target = f"{SPEC}.resources"
    resources = payload.obj(value, target)
    payload.count(resources.get("instance_count"), f"{target}.instance_count")
    for key in ("instance_type", "shm_size", "docker_args"):
        payload.string(resources.get(key), f"{target}.{key}")
    return resources


def _distribution(value: object) -> None:
    """PyTorch, MPI, TensorFlow or Ray, with the SDK's snake_case counts (none, or an empty object: one process)."""
    target = f"{SPEC}.distribution"
    distribution = payload.obj(value, target)
    kind = distribution.get("type")
    if distribution and (not isinstance(kind, str) or kind.lower() not in DISTRIBUTIONS):
        raise ValidationFailed(f"{target}.type must be one of {', '.join(DISTRIBUTIONS)}, got {kind!r}.",
                               target=f"{target}.type")
    payload.count(distribution.get("process_count_per_instance"), f"{target}.process_count_per_instance")
    for key in ("worker_count", "parameter_server_count"):  # TensorFlow's: a job may have no parameter server
        payload.count(distribution.get(key), f"{target}.{key}", minimum=0)


def _environment(value: object, target: str = f"{SPEC}.environment") -> str:
    if isinstance(value, dict):
        raise ValidationFailed(f"{target} must name a registered environment (the SDK registers an inline one "
                               "first and sends its id), not define one.", target=target)
    return payload.required_string(value, target)


def pipeline_steps(spec: dict) -> dict[str, pipeline.StepSpec]:
    """A pipeline component's steps (its `jobs`, as a pipeline job's `properties.jobs` are written), checked."""
    jobs = payload.obj(spec.get("jobs"), f"{SPEC}.jobs", required=True)
    if not jobs:
        raise ValidationFailed(f"{SPEC}.jobs: a pipeline component needs at least one step.", target=f"{SPEC}.jobs")
    return pipeline.steps_of(jobs, f"{SPEC}.jobs")


def version_body(body: object, url_name: str, url_version: str) -> dict:
    """A component version as stored: the common asset fields and the checked spec (name and version filled)."""
    name(url_name)
    versioned.version(url_version)
    if url_version.lower() == DEFAULT_VERSION:
        raise ValidationFailed(f"'{DEFAULT_VERSION}' names a component's newest version; it cannot be created.",
                               target="version")
    props, common = versioned.common_fields(body)
    spec = dict(payload.obj(props.get("componentSpec"), SPEC, required=True))
    _name_version(spec, url_name, url_version, common["isAnonymous"])
    spec["inputs"] = component_io.inputs(spec.get("inputs"), f"{SPEC}.inputs")
    spec["outputs"] = component_io.outputs(spec.get("outputs"), f"{SPEC}.outputs")
    kind = kind_of(spec)
    if kind == PIPELINE:  # no code or environment of its own: its steps name the components that run
        pipeline_steps(spec)
    elif kind == PARALLEL:  # its code and environment are its task's
        parallel_steps.check(spec, SPEC, spec["inputs"], spec["outputs"], whole=True)
        _environment(spec["task"].get("environment"), f"{SPEC}.task.environment")
    else:
        _command(spec)
        _environment(spec.get("environment"))
        payload.string(spec.get("code"), f"{SPEC}.code")
    _resources(spec.get("resources"))
    _distribution(spec.get("distribution"))
    payload.string_map(spec.get("environment_variables"), f"{SPEC}.environment_variables")
    for key in ("display_name", "description"):
        payload.string(spec.get(key), f"{SPEC}.{key}")
    if spec.get("is_deterministic") is not None and not isinstance(spec["is_deterministic"], bool):
        raise ValidationFailed(f"{SPEC}.is_deterministic must be true or false.", target=f"{SPEC}.is_deterministic")
    return {**common, "componentSpec": spec}


def changed(old: dict, new: dict) -> str | None:
    """The first part of the spec a PUT on an existing version would change (versions are immutable), or None."""
    before, after = old.get("componentSpec") or {}, new.get("componentSpec") or {}
    # an anonymous version is named by its spec's hash, which leaves out the spec's name and version (the SDK's
    # _get_anonymous_hash): the same step loaded from YAML or by load_component is the same version
    ignored = _MUTABLE + (("name", "version") if old.get("isAnonymous") else ())
    for key in sorted(set(before) | set(after)):
        if key not in ignored and before.get(key) != after.get(key):
            return f"componentSpec.{key}"
    return None


def hidden(bodies: list[dict]) -> bool:
    """Anonymous components are kept for the jobs that use them, but a workspace does not list them."""
    return all(b.get("isAnonymous") for b in bodies)


@dataclass(frozen=True)
class Reference:
    """A component (or code, or environment) as something names it: in a workspace (`workspace` is the one the id
    names, or None for a short `azureml:<name>:<version>`) or in a registry; by version or by label."""
    name: str
    version: str | None
    label: str | None
    registry: str | None = None
    workspace: tuple[str, str, str] | None = None  # (subscription, resource group, name) an ARM id names


def reference(value: object, kind: str, target: str) -> Reference:
    """`azureml:<name>:<version>`, `azureml:<name>@latest`, an ARM id `.../workspaces/<ws>/<kind>/<name>/versions/
    <v>` or `.../labels/latest` (with or without `azureml:` before it, as the SDK writes component specs), or
    `azureml://registries/<registry>/<kind>/<name>/versions/<v>` or `.../labels/latest`."""
    text = payload.required_string(value, target).strip()
    if registry_ids.is_asset_id(text):
        found = registry_ids.asset_ref(text, kind, target)
        return Reference(found.name, found.version, found.label, registry=found.registry)
    arm = re.fullmatch(rf"^(?:azureml:)?{_WORKSPACE_ID}{kind}/{_TAIL}$", text, re.IGNORECASE)
    match = arm or _SHORT.fullmatch(text)
    if match is None:
        raise ValidationFailed(f"{target} must name a {kind[:-1]} as azureml:<name>:<version>, azureml:<name>@latest, "
                               f"the ARM id of a version or azureml://registries/<registry>/{kind}/<name>/versions/"
                               f"<version>, got {text[:200]!r}.", target=target)
    label = match["label"]
    if label is not None and label.lower() != LATEST:
        raise ValidationFailed(f"{target}: the only label is '{LATEST}', not '{label}'.", target=target)
    workspace = (match["sub"], match["rg"], match["ws"]) if arm else None
    return Reference(versioned.unprefixed(match["name"]), match["version"], label and LATEST, workspace=workspace)


@dataclass(frozen=True)
class ComponentSpec:
    """What a pipeline step needs of a stored component version to run it as a command job."""
    name: str
    version: str
    command: str
    code_id: str | None  # an ARM id (or azureml://registries/... id) of a code version
    environment_id: str | None  # as a command job's environmentId takes it; None: a pipeline component's
    inputs: dict[str, dict]
    outputs: dict[str, dict]
    resources: dict
    distribution: dict | None
    environment_variables: dict[str, str]
    is_deterministic: bool
    parallel: dict | None = None  # a parallel component's fields (parallel_steps.FIELDS); None: a command one
    kind: str = COMMAND


def _arm(value: str | None) -> str | None:
    """An id as a job takes it: the SDK writes component specs' ARM ids with `azureml:` before them."""
    if value and value.lower().startswith("azureml:/subscriptions/"):
        return value[len("azureml:"):]
    return value


def spec_of(body: dict) -> ComponentSpec:
    """The spec of a stored version (checked when it was stored)."""
    spec = body["componentSpec"]
    code, environment, _ = runs_with(spec)
    is_parallel = spec.get("type", COMMAND).lower() == PARALLEL
    return ComponentSpec(name=spec["name"], version=spec["version"], command=spec.get("command") or "",
                         code_id=_arm(code), environment_id=_arm(environment),
                         inputs=spec.get("inputs") or {}, outputs=spec.get("outputs") or {},
                         resources=spec.get("resources") or {}, distribution=spec.get("distribution"),
                         environment_variables=spec.get("environment_variables") or {},
                         is_deterministic=spec.get("is_deterministic", True),
                         parallel=parallel_steps.fields(spec) if is_parallel else None,
                         kind=spec.get("type", COMMAND).lower())
