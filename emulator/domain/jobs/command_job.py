"""Command jobs: the PUT body a user gives, checked and normalised. Pure: existence checks live in the service.

The stored body is what the SDK reads back, so it keeps the wire names; `JobSpec` is what the controller
needs to run the job.
"""

import re
from dataclasses import dataclass

from emulator.domain import durations, payload
from emulator.domain.compute import local, preemption, serverless
from emulator.domain.jobs import placeholders
from emulator.errors import ValidationFailed

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,254}$")
INPUT_TYPES = ("literal", "uri_file", "uri_folder", "mlflow_model", "custom_model", "mltable", "triton_model")
OUTPUT_TYPES = ("uri_file", "uri_folder", "mlflow_model", "custom_model", "mltable", "triton_model")
DISTRIBUTIONS = ("PyTorch", "Mpi", "TensorFlow")
# Delivery modes on the wire (the SDK's ro_mount, download, direct, eval_mount, eval_download; rw_mount, upload).
INPUT_MODES = ("ReadOnlyMount", "Download", "Direct", "EvalMount", "EvalDownload")
OUTPUT_MODES = ("ReadWriteMount", "Upload", "Direct")
DOWNLOADS = ("Download", "EvalDownload")  # the job gets a copy of its own, which it may change
DEFAULT_EXPERIMENT = "Default"
P = "properties"
# Kept in the stored body, never shown: {input: datastore URI} for the inputs naming a data asset, resolved
# at submit (the input itself keeps what the user sent, as Azure shows it).
RESOLVED_INPUTS = "amlemuInputDataUris"
# The stored key of the environment version a registry reference (azureml://registries/...) resolved to at submit:
# the job keeps showing the reference as given, and runs what it meant then.
RESOLVED_ENVIRONMENT = "amlemuEnvironmentKey"
# A pipeline step's reuse key (domain/jobs/pipeline_steps.py): an earlier run with the same may stand in for it.
REUSE_KEY = "amlemuReuseKey"
PRIVATE = (RESOLVED_INPUTS, RESOLVED_ENVIRONMENT, REUSE_KEY, local.AWAITING)  # the emulator's own, never shown


@dataclass(frozen=True)
class JobSpec:
    command: str
    code_id: str | None
    environment_id: str
    compute_id: str | None  # None: serverless compute, on `capacity`, or local compute
    capacity: serverless.Capacity | None
    local: bool  # compute="local": the emulator's machine (domain/compute/local.py)
    inputs: dict[str, dict]
    outputs: dict[str, dict]
    environment_variables: dict[str, str]
    instance_count: int
    distribution: dict | None
    timeout_seconds: float | None


def name(value: str) -> str:
    if not _NAME.fullmatch(value):
        raise ValidationFailed(f"Invalid job name '{value}': 1 to 255 characters, letters, digits, '-' and '_', "
                               "starting with a letter or digit.", target="name")
    return value


def _typed(value: object, target: str, type_key: str, types: tuple[str, ...], modes: tuple[str, ...]) -> dict:
    entry = payload.obj(value, target, required=True)
    kind = entry.get(type_key)
    if kind not in types:
        raise ValidationFailed(f"{target}.{type_key} must be one of {', '.join(types)}, got {kind!r}.",
                               target=f"{target}.{type_key}")
    for key in ("uri", "mode", "description"):
        payload.string(entry.get(key), f"{target}.{key}")
    if kind != "literal" and entry.get("mode") is not None and entry["mode"] not in modes:
        raise ValidationFailed(f"{target}.mode must be one of {', '.join(modes)}, got {entry['mode']!r}.",
                               target=f"{target}.mode")
    return entry


def _input(key: str, value: object) -> dict:
    target = f"{P}.inputs.{key}"
    entry = _typed(value, target, "jobInputType", INPUT_TYPES, INPUT_MODES)
    if entry["jobInputType"] == "literal":
        literal = entry.get("value")
        if not isinstance(literal, str):
            raise ValidationFailed(f"{target}.value must be a string.", target=f"{target}.value")
    else:
        payload.required_string(entry.get("uri"), f"{target}.uri")
    return entry


def _io(value: object, kind: str, parse_entry) -> dict[str, dict]:
    entries = payload.obj(value, f"{P}.{kind}")
    result = {}
    for key, entry in entries.items():
        if not placeholders.valid_name(key):
            raise ValidationFailed(f"Invalid {kind[:-1]} name '{key}': letters, digits and '_', not starting with "
                                   "a digit.", target=f"{P}.{kind}.{key}")
        if entry is not None:  # the SDK sends null for an output left to its defaults
            result[key] = parse_entry(key, entry)
    return result


def _output(key: str, value: object) -> dict:
    return _typed(value, f"{P}.outputs.{key}", "jobOutputType", OUTPUT_TYPES, OUTPUT_MODES)


def ports(props: dict) -> tuple[dict[str, dict], dict[str, dict]]:
    """A job's inputs and outputs, checked and normalised (command, sweep and pipeline jobs alike)."""
    return _io(props.get("inputs"), "inputs", _input), _io(props.get("outputs"), "outputs", _output)


def _instance_count(resources: dict) -> int:
    count = resources.get("instanceCount", 1)
    count = 1 if count is None else count
    if isinstance(count, bool) or not isinstance(count, int) or count < 1:
        raise ValidationFailed(f"{P}.resources.instanceCount must be a positive integer, got {count!r}.",
                               target=f"{P}.resources.instanceCount")
    return count


def _distribution(value: object) -> dict | None:
    target = f"{P}.distribution"
    if value is None:
        return None
    dist = payload.obj(value, target)
    kind = dist.get("distributionType")
    if kind not in DISTRIBUTIONS:
        raise ValidationFailed(f"{target}.distributionType must be one of {', '.join(DISTRIBUTIONS)}, got {kind!r}.",
                               target=f"{target}.distributionType")
    per_instance = dist.get("processCountPerInstance", 1)
    if per_instance not in (None, 1):
        raise ValidationFailed(f"amlemu runs one process per node: {target}.processCountPerInstance must be 1, got "
                               f"{per_instance!r}. Use more instances (instance_count) instead.",
                               target=f"{target}.processCountPerInstance")
    return dist


def _timeout(limits: dict) -> float | None:
    value = limits.get("timeout")
    return None if value is None else durations.parse_seconds(value, f"{P}.limits.timeout")


def parse(body: object) -> tuple[dict, JobSpec]:
    """The properties to store (as given, normalised) and the spec to run."""
    body = payload.obj(body, "body", required=True)
    payload.finite(body)
    props = dict(payload.obj(body.get(P), P, required=True))
    if props.get("jobType") != "Command":
        raise ValidationFailed(f"amlemu runs command, sweep and pipeline jobs: {P}.jobType must be 'Command', "
                               f"'Sweep' or 'Pipeline', got {props.get('jobType')!r}.", target=f"{P}.jobType")
    command = payload.required_string(props.get("command"), f"{P}.command")
    inputs, outputs = ports(props)
    placeholders.check(command, inputs, outputs)
    compute_id = payload.string(props.get("computeId"), f"{P}.computeId") or None
    code_id = payload.string(props.get("codeId"), f"{P}.codeId")
    resources = payload.obj(props.get("resources"), f"{P}.resources")
    tier = serverless.job_tier(payload.obj(props.get("queueSettings"), f"{P}.queueSettings"), P)
    limits = payload.obj(props.get("limits"), f"{P}.limits")
    on_machine = local.is_local(resources) and not compute_id
    spec = JobSpec(command=command, code_id=code_id or None,
                   environment_id=payload.required_string(props.get("environmentId"), f"{P}.environmentId"),
                   compute_id=compute_id, local=on_machine,
                   capacity=None if compute_id or on_machine else serverless.capacity(resources, tier, P),
                   inputs=inputs, outputs=outputs,
                   environment_variables=payload.string_map(props.get("environmentVariables"), f"{P}.environmentVariables"),
                   instance_count=_instance_count(resources), distribution=_distribution(props.get("distribution")),
                   timeout_seconds=_timeout(limits))
    if on_machine:
        local.check(spec.instance_count, spec.distribution, P)
    for key in ("displayName", "experimentName", "description"):
        payload.string(props.get(key), f"{P}.{key}")
    props.update(inputs=inputs, outputs=outputs, environmentVariables=spec.environment_variables,
                 tags=payload.string_map(props.get("tags"), f"{P}.tags"),
                 properties=payload.string_map(props.get("properties"), f"{P}.properties"),
                 experimentName=props.get("experimentName") or DEFAULT_EXPERIMENT,
                 resources={**resources, "instanceCount": spec.instance_count},
                 isArchived=bool(props.get("isArchived", False)))
    preemption.job_choice(props["properties"])  # the job's own onPreemption, checked now rather than when it bites
    props.pop("status", None)  # read-only
    for key in PRIVATE:  # the emulator's own
        props.pop(key, None)
    return props, spec


def input_uri(props: dict, name: str) -> str:
    """Where a stored job's (non-literal) input reads from: a data asset's files, or its uri as given."""
    return props.get(RESOLVED_INPUTS, {}).get(name) or props["inputs"][name]["uri"]


def environment_key(props: dict) -> str:
    """The stored environment version a stored job runs in."""
    return props.get(RESOLVED_ENVIRONMENT) or props["environmentId"]


def spec_of(props: dict) -> JobSpec:
    """The spec of a stored body (validated when it was stored)."""
    return parse({P: props})[1]


def instance_count(props: dict) -> int:
    """Of a stored body, which `parse` normalised: no need to parse it again on every pass."""
    return props["resources"]["instanceCount"]


def arm_child_name(arm_id: str, kind: str) -> str:
    """The name after `/<kind>/` in an ARM id, or the whole value when it is a bare name."""
    parts = arm_id.strip("/").split("/")
    lowered = [p.lower() for p in parts]
    if kind in lowered:
        index = lowered.index(kind)
        if index + 1 < len(parts):
            return parts[index + 1]
    return arm_id


def version_ref(arm_id: str, kind: str, target: str) -> tuple[str, str]:
    """(name, version) from `.../<kind>/<name>/versions/<version>`."""
    match = re.search(rf"/{kind}/([^/]+)/versions/([^/]+)$", arm_id, re.IGNORECASE)
    if not match:
        raise ValidationFailed(f"{target} must be the ARM id of a {kind[:-1]} version "
                               f"('.../{kind}/<name>/versions/<version>'), got {arm_id!r}.", target=target)
    return match.group(1), match.group(2)
