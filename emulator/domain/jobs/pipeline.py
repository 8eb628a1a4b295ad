"""Pipeline jobs: the PUT body the SDK sends (`properties.jobType: Pipeline`), checked and read. Pure.

The pipeline's own `inputs` and `outputs` are a command job's (camelCase, `jobInputType`); its steps under
`properties.jobs` are in the SDK's snake_case (`job_input_type`, `componentId`, `computeId`, `resources.
instance_count`); `settings` holds `default_compute` and `default_datastore` (ARM ids, `.../computes/serverless` for
serverless compute), `continue_on_step_failure` and `force_rerun`. The stored body is what the SDK reads back, so it
keeps the wire names; `PipelineSpec` is what the controller needs to run the steps (pipeline_steps.py makes each a
command job).
"""

from dataclasses import dataclass

from emulator.domain import payload
from emulator.domain.jobs import command_job, parallel_steps, placeholders
from emulator.errors import ValidationFailed

P = command_job.P
J = f"{P}.jobs"
SETTINGS = f"{P}.settings"
STEP_TYPES = ("command", "parallel")
SERVERLESS = "serverless"
_NOT_YET = ("sweep", "pipeline", "spark", "data_transfer", "import", "if_else", "do_while",
            "parallel_for")


@dataclass(frozen=True)
class StepSpec:
    name: str
    component_id: str
    compute_id: str | None  # None: the pipeline's default compute
    inputs: dict[str, dict]  # as sent: {job_input_type, value | uri, mode?}
    outputs: dict[str, dict]  # as sent: {job_output_type, uri?, mode?} or {type: literal, value: ${{parent...}}}
    resources: dict
    environment_variables: dict[str, str]
    distribution: dict | None
    limits: dict
    queue_settings: dict
    display_name: str | None
    tags: dict[str, str]
    kind: str = "command"  # or "parallel"
    parallel: dict | None = None  # a parallel step's own fields (parallel_steps.FIELDS), over its component's


@dataclass(frozen=True)
class PipelineSpec:
    inputs: dict[str, dict]  # camelCase, as a command job's
    outputs: dict[str, dict]
    default_compute: str | None
    default_datastore: str | None
    continue_on_step_failure: bool
    force_rerun: bool
    steps: dict[str, StepSpec]


def is_serverless(compute_id: str | None) -> bool:
    """`serverless`, or the ARM id the SDK makes of it (`.../computes/serverless`)."""
    return bool(compute_id) and command_job.arm_child_name(compute_id, "computes").lower() == SERVERLESS


def _flag(settings: dict, key: str) -> bool:
    value = settings.get(key)
    if value is None:
        return False
    if not isinstance(value, bool):
        raise ValidationFailed(f"{SETTINGS}.{key} must be true or false, got {value!r}.", target=f"{SETTINGS}.{key}")
    return value


def _ports(value: object, target: str) -> dict[str, dict]:
    ports = payload.obj(value, target)
    for key, entry in ports.items():
        payload.obj(entry, f"{target}.{key}")
    return {key: entry for key, entry in ports.items() if entry is not None}


def _step(name: str, value: object, where: str = J) -> StepSpec:
    target = f"{where}.{name}"
    if not placeholders.valid_name(name):
        raise ValidationFailed(f"Invalid step name '{name}': letters, digits and '_', not starting with a digit.",
                               target=target)
    step = payload.obj(value, target, required=True)
    kind = step.get("type")
    if kind not in STEP_TYPES:
        later = f" amlemu does not run {kind} steps yet." if kind in _NOT_YET else ""
        raise ValidationFailed(f"{target}.type must be one of {', '.join(STEP_TYPES)}, got {kind!r}.{later}",
                               target=f"{target}.type")
    component = step.get("componentId")
    if isinstance(component, dict) or (isinstance(component, str) and "\n" in component):
        raise ValidationFailed(f"{target}.componentId must name a registered component (the SDK registers an inline "
                               "step as an anonymous component first and sends its id).", target=f"{target}.componentId")
    distribution = step.get("distribution")
    return StepSpec(
        name=name, component_id=payload.required_string(component, f"{target}.componentId"),
        compute_id=payload.string(step.get("computeId"), f"{target}.computeId") or None,
        inputs=_ports(step.get("inputs"), f"{target}.inputs"), outputs=_ports(step.get("outputs"), f"{target}.outputs"),
        resources=payload.obj(step.get("resources"), f"{target}.resources"),
        environment_variables=payload.string_map(step.get("environment_variables"), f"{target}.environment_variables"),
        distribution=payload.obj(distribution, f"{target}.distribution") if distribution is not None else None,
        limits=payload.obj(step.get("limits"), f"{target}.limits"),
        queue_settings=payload.obj(step.get("queue_settings"), f"{target}.queue_settings"),
        display_name=payload.string(step.get("display_name"), f"{target}.display_name"),
        tags=payload.string_map(step.get("tags"), f"{target}.tags"), kind=kind,
        parallel=parallel_steps.fields(step) if kind == "parallel" else None)


def steps_of(steps: dict, where: str = J) -> dict[str, StepSpec]:
    """A pipeline's steps (`properties.jobs`), or a pipeline component's (`where`: its spec's `jobs`), checked."""
    return {name: _step(name, value, where) for name, value in steps.items()}


def parse(body: object) -> tuple[dict, PipelineSpec]:
    """The properties to store (as given, normalised) and the spec to run."""
    body = payload.obj(body, "body", required=True)
    payload.finite(body)
    props = dict(payload.obj(body.get(P), P, required=True))
    if props.get("jobType") != "Pipeline":
        raise ValidationFailed(f"{P}.jobType must be 'Pipeline', got {props.get('jobType')!r}.", target=f"{P}.jobType")
    inputs, outputs = command_job.ports(props)  # the pipeline's own, as a command job's
    steps = payload.obj(props.get("jobs"), J, required=True)
    if not steps:
        raise ValidationFailed(f"{J}: a pipeline needs at least one step.", target=J)
    settings = payload.obj(props.get("settings"), SETTINGS)
    spec = PipelineSpec(
        inputs=inputs, outputs=outputs,
        default_compute=payload.string(settings.get("default_compute"), f"{SETTINGS}.default_compute") or None,
        default_datastore=payload.string(settings.get("default_datastore"), f"{SETTINGS}.default_datastore") or None,
        continue_on_step_failure=_flag(settings, "continue_on_step_failure"), force_rerun=_flag(settings, "force_rerun"),
        steps=steps_of(steps))
    for key in ("displayName", "experimentName", "description"):
        payload.string(props.get(key), f"{P}.{key}")
    props.update(inputs=spec.inputs, outputs=spec.outputs,
                 tags=payload.string_map(props.get("tags"), f"{P}.tags"),
                 properties=payload.string_map(props.get("properties"), f"{P}.properties"),
                 experimentName=props.get("experimentName") or command_job.DEFAULT_EXPERIMENT,
                 isArchived=bool(props.get("isArchived", False)))
    props.pop("status", None)  # read-only
    return props, spec


def spec_of(props: dict) -> PipelineSpec:
    """The spec of a stored body (checked when it was stored)."""
    return parse({P: props})[1]
