"""A pipeline step as the command job that runs it, and what decides whether an earlier run can stand in. Pure.

A step's child job takes its command, code, environment, defaults, resources and distribution from the step's
component (pinned when the pipeline was submitted) and its values from the step: a literal, the pipeline's input
(`${{parent.inputs.x}}`), or an earlier step's output (`${{parent.jobs.a.outputs.b}}`), which the child reads as that
step's child's output (`azureml://jobs/<child>/outputs/<b>`). A step's output is where the step says (`${{name}}` is
the child's name), the pipeline's output it binds to (`${{parent.outputs.y}}`: there, so the pipeline's output is
the step's), or the default datastore's `azureml/<child>/<output>/`.

Children are named by a GUID of the pipeline and the step, as Azure names a pipeline's child runs; the same
pipeline and step always give the same name, so a controller that restarts never makes a step twice.
"""

import hashlib
import json
import uuid
from collections.abc import Mapping

from emulator.domain.assets.components import PIPELINE, ComponentSpec
from emulator.domain.jobs import artifacts, command_job, parallel, parallel_steps, pipeline_graph
from emulator.domain.jobs.pipeline import J, PipelineSpec, StepSpec, is_serverless
from emulator.domain.storage import datastores
from emulator.errors import ValidationFailed

# The SDK's snake_case (component specs and steps) to a command job's camelCase.
_KEYS = {"job_input_type": "jobInputType", "job_output_type": "jobOutputType", "asset_name": "assetName",
         "asset_version": "assetVersion", "path_on_compute": "pathOnCompute", "instance_count": "instanceCount",
         "instance_type": "instanceType", "shm_size": "shmSize", "docker_args": "dockerArgs",
         "process_count_per_instance": "processCountPerInstance", "worker_count": "workerCount",
         "parameter_server_count": "parameterServerCount", "job_tier": "jobTier"}
_MODES = {"ro_mount": "ReadOnlyMount", "download": "Download", "direct": "Direct", "eval_mount": "EvalMount",
          "eval_download": "EvalDownload", "rw_mount": "ReadWriteMount", "upload": "Upload"}
_DISTRIBUTIONS = {"pytorch": "PyTorch", "mpi": "Mpi", "tensorflow": "TensorFlow"}
ASSET_TYPES = command_job.OUTPUT_TYPES
REUSED_FLAG, REUSED_RUN = "azureml.isreused", "azureml.reusedrunid"  # what the SDK's download reads


def child_name(parent_key: str, step: str) -> str:
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"{parent_key}/jobs/{step}"))


def _camel(entry: Mapping) -> dict:
    return {_KEYS.get(key, key): value for key, value in entry.items() if value is not None}


def job_mode(value: object) -> object:
    """A port's mode as a job takes it (ReadOnlyMount, Upload, ...) from the YAML spelling (ro_mount, upload)."""
    return _MODES.get(value, value) if isinstance(value, str) else value


def _port_text(entry: Mapping) -> str:
    """What a graph reads of a step's port: its binding or literal value as written (a path's `${{name}}` is no
    binding)."""
    value = entry.get("value")
    return value if isinstance(value, str) else ""


def graph_steps(steps: Mapping[str, StepSpec],
                components: Mapping[str, ComponentSpec]) -> dict[str, pipeline_graph.Step]:
    return {name: pipeline_graph.Step(inputs={k: _port_text(v) for k, v in step.inputs.items()},
                                      outputs={k: _port_text(v) for k, v in step.outputs.items()},
                                      declared_outputs=frozenset(components[name].outputs))
            for name, step in steps.items()}


def _literal(value: object) -> dict:
    text = str(value).lower() if isinstance(value, bool) else str(value)
    return {"jobInputType": "literal", "value": text}


def _substituted(text: str, pipeline_inputs: Mapping[str, dict], target: str) -> str:
    """A literal with ${{parent.inputs.x}} inside it (x a literal of the pipeline) filled in."""
    for binding in pipeline_graph.bindings(text, target):
        entry = pipeline_inputs.get(binding.name)
        if binding.kind != "inputs" or entry is None or entry["jobInputType"] != "literal":
            raise ValidationFailed(f"{target}: {text[:200]!r} mixes text with a binding; only the pipeline's literal "
                                   "inputs can be part of a longer value.", target=target)
        text = text.replace(f"${{{{parent.inputs.{binding.name}}}}}", entry["value"])
    return text


def _whole_binding(value: object, target: str) -> pipeline_graph.Binding | None:
    """The binding a port's value is, when it is one binding and nothing else."""
    if not isinstance(value, str):
        return None
    text = value.strip()
    found = pipeline_graph.bindings(text, target)
    return found[0] if len(found) == 1 and text.startswith("${{") and text.endswith("}}") else None


def _given(spec: PipelineSpec, step: StepSpec, name: str, declared: dict, children: Mapping[str, str]) -> dict | None:
    """The value a step gives its input, as its child job takes it; None when it gives none."""
    target = f"{J}.{step.name}.inputs.{name}"
    given = step.inputs.get(name)
    if given is None or (given.get("value") is None and given.get("uri") is None):
        return None
    mode = job_mode(given.get("mode"))
    binding = _whole_binding(given.get("value"), target)
    if binding is not None and binding.kind == "inputs":  # the pipeline's input
        own = spec.inputs[binding.name]
        if own["jobInputType"] == "literal":
            return _literal(own["value"])
        return _camel({**own, "mode": mode or own.get("mode")})
    if binding is not None:  # an earlier step's output
        kind = declared["type"] if declared.get("type") in ASSET_TYPES else "uri_folder"
        return _camel({"jobInputType": kind, "uri": f"azureml://jobs/{children[binding.name]}/outputs/{binding.port}",
                       "mode": mode or job_mode(declared.get("mode"))})
    if given.get("job_input_type", "literal") == "literal":
        value = given["value"]
        return _literal(_substituted(value, spec.inputs, target) if isinstance(value, str) else value)
    return _camel({**given, "mode": mode})


def _input(spec: PipelineSpec, step: StepSpec, name: str, declared: dict, children: Mapping[str, str]) -> dict | None:
    """What the step gives, else the component's default; None for an optional input left out."""
    if (given := _given(spec, step, name, declared, children)) is not None:
        return given
    if declared.get("default") is not None:
        return _literal(declared["default"])
    if declared.get("optional"):
        return None
    target = f"{J}.{step.name}.inputs.{name}"
    raise ValidationFailed(f"{target}: the step's component requires input '{name}' and it has no default; bind it "
                           "(${{parent.inputs.<input>}} or ${{parent.jobs.<step>.outputs.<output>}}) or give a value.",
                           target=target)


def _output(spec: PipelineSpec, step: StepSpec, name: str, declared: dict, child: str, parent: str) -> dict:
    given = step.outputs.get(name) or {}
    kind = declared["type"]
    entry = {"jobOutputType": kind, "mode": job_mode(given.get("mode") or declared.get("mode"))}
    value = given.get("value")
    if isinstance(value, str) and "${{" in value:  # the pipeline's output: the step writes where that one lives
        bound = pipeline_graph.bindings(value, f"{J}.{step.name}.outputs.{name}")[0]
        own = spec.outputs[bound.name]  # its path, if given, was filled in with this step's name at submit
        entry.update(uri=artifacts.output_uri(parent, bound.name, own), mode=entry["mode"] or own.get("mode"))
    elif given.get("uri"):
        entry["uri"] = artifacts.named(given["uri"], child, name)
    elif spec.default_datastore:
        store = command_job.arm_child_name(spec.default_datastore, "datastores")
        if store != datastores.BLOB_STORE:
            entry["uri"] = f"azureml://datastores/{store}/paths/azureml/{child}/{name}/"
    for key in ("asset_name", "asset_version"):
        entry[key] = given.get(key)
    return _camel(entry)


def _distribution(value: dict | None) -> dict | None:
    if not value:
        return None
    kind = str(value.get("type", "")).lower()
    return _camel({"distributionType": _DISTRIBUTIONS.get(kind, kind),
                   **{k: v for k, v in value.items() if k != "type"}})


def child_body(spec: PipelineSpec, props: Mapping, step_name: str, component: ComponentSpec,
               children: Mapping[str, str], parent: str) -> dict:
    """The command job PUT body of a step's child; `children`: every step's child name; `parent`: the pipeline's."""
    step, child = spec.steps[step_name], children[step_name]
    if component.kind == PIPELINE:
        raise ValidationFailed(f"{J}.{step_name}.componentId names pipeline component '{component.name}': amlemu "
                               "runs pipeline components behind batch endpoints, not as a step of another pipeline "
                               "yet; use its steps in this pipeline.", target=f"{J}.{step_name}.componentId")
    if (component.parallel is not None) != (step.kind == "parallel"):
        raise ValidationFailed(f"{J}.{step_name}.type is '{step.kind}' but its component is a "
                               f"{'parallel' if component.parallel is not None else 'command'} component.",
                               target=f"{J}.{step_name}.type")
    unknown = sorted(set(step.inputs) - set(component.inputs))
    if unknown:
        raise ValidationFailed(f"{J}.{step_name}.inputs.{unknown[0]}: the step's component has no input "
                               f"'{unknown[0]}' (its inputs: {', '.join(sorted(component.inputs)) or 'none'}).",
                               target=f"{J}.{step_name}.inputs.{unknown[0]}")
    inputs = {name: entry for name, declared in component.inputs.items()
              if (entry := _input(spec, step, name, declared, children)) is not None}
    outputs = {name: _output(spec, step, name, declared, child, parent) for name, declared in component.outputs.items()
               if declared["type"] in ASSET_TYPES}
    compute = step.compute_id or spec.default_compute
    command = component.command if step.kind == "command" else _parallel_command(step, component, inputs, outputs)
    body = {"jobType": "Command", "command": command, "codeId": component.code_id,
            "environmentId": component.environment_id, "inputs": inputs, "outputs": outputs,
            "environmentVariables": {**component.environment_variables, **step.environment_variables},
            "resources": {**_camel(component.resources), **_camel(step.resources)},
            "distribution": _distribution(step.distribution or component.distribution),
            "limits": _camel(step.limits) or None, "queueSettings": _camel(step.queue_settings) or None,
            "displayName": step.display_name or step_name, "experimentName": props.get("experimentName"),
            "tags": step.tags, "properties": {"azureml.nodeid": step_name, "azureml.pipeline": parent}}
    if compute and not is_serverless(compute):
        body["computeId"] = compute
    return {command_job.P: {k: v for k, v in body.items() if v is not None}}


def _parallel_command(step: StepSpec, component: ComponentSpec, inputs: dict[str, dict],
                      outputs: dict[str, dict]) -> str:
    """A parallel step's child runs the parallel runner over its settings; the input it splits is mounted (an
    mltable's `direct` is a URI the runner could not list)."""
    target = f"{J}.{step.name}"
    parallel_steps.check(step.parallel or {}, target, component.inputs, component.outputs, whole=False)
    given = parallel_steps.merged(component.parallel or {}, step.parallel or {})
    count = _camel(step.resources).get("instanceCount") or _camel(component.resources).get("instanceCount") or 1
    settings = parallel_steps.settings(given, count, target)
    name = parallel_steps.input_name(given)
    if name in inputs:
        inputs[name] = {**inputs[name], "mode": parallel.mounted(inputs[name].get("mode"))}
    return parallel_steps.command(given, settings, inputs, outputs, target)


def reuse_key(body: Mapping, upstream: Mapping[str, str], child: str, parent: str) -> str:
    """What must be equal for an earlier run of a step to stand in for this one: command, code, environment,
    inputs (an earlier step's output by where it lives: `upstream`, its azureml://jobs/ URI -> that), outputs (where they go, but
    for this run's own names: `child`, `parent`), variables, resources and distribution; not the compute."""
    props = body[command_job.P]
    inputs = {}
    for name, entry in props["inputs"].items():
        inputs[name] = {**entry, "uri": upstream.get(entry["uri"], entry["uri"])} if "uri" in entry else entry
    seen = {key: props.get(key) for key in ("command", "codeId", "environmentId", "environmentVariables",
                                            "resources", "distribution")}
    names = {child: "${{name}}", parent: "${{parent}}"}
    outputs = {name: {**entry, "uri": "/".join(names.get(part, part) for part in entry["uri"].split("/"))}
               if entry.get("uri") else entry for name, entry in (props.get("outputs") or {}).items()}
    text = json.dumps({**seen, "inputs": inputs, "outputs": outputs}, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()


def named_outputs(spec: PipelineSpec, props: dict, children: Mapping[str, str]) -> None:
    """The pipeline's outputs whose paths hold `${{name}}`, filled in with the name of the step writing them (Azure
    resolves it to the step's job), so the pipeline's output reads back where the step wrote."""
    for step in spec.steps.values():
        for name, given in step.outputs.items():
            value = given.get("value")
            if not (isinstance(value, str) and "${{" in value):
                continue
            bound = pipeline_graph.bindings(value, f"{J}.{step.name}.outputs.{name}")[0].name
            own = props["outputs"][bound]
            if own.get("uri"):
                own["uri"] = artifacts.named(own["uri"], children[step.name], bound)


def failure(failed: list[str]) -> str:
    """Azure's words for a pipeline whose steps failed."""
    nodes = ", ".join(f"/{name}" for name in failed)
    return (f"Pipeline has failed child jobs. Failed nodes: {nodes}. For more details and logs, please go to the job "
            "detail page and check the child jobs.")
