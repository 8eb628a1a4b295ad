"""Invoking a pipeline component deployment: the pipeline job it makes. Pure.

Azure runs the deployment's pipeline component as a pipeline job on the deployment's `default_compute`: the
component's steps are the job's steps (its `jobs`, written as a pipeline job's `properties.jobs` are), the
invocation's `inputData` and `outputData` are the job's inputs and outputs, by the component's port names, and a
primitive input the invocation leaves out takes the component's default. The job carries the batch tags, with the
pipeline job type, so `jobs.download` reads its named outputs as a pipeline's.
"""

from emulator.domain.jobs.pipeline_steps import job_mode
from emulator.domain.serving import batch_jobs
from emulator.domain.serving.batch_jobs import INPUTS, OUTPUTS, Invocation
from emulator.errors import ValidationFailed

PIPELINE_JOB_TYPE = "azureml.pipelinejob"  # the SDK's PipelineConstants.PIPELINE_JOB_TYPE
_SETTINGS = ("default_datastore", "continue_on_step_failure", "force_rerun")


def _unknown(given: dict, declared: dict, field: str, what: str, component: str) -> None:
    for name in given:
        if name not in declared:
            raise ValidationFailed(f"{field}.{name}: pipeline component '{component}' has no {what} '{name}' (its "
                                   f"{what}s: {', '.join(sorted(declared)) or 'none'}).", target=f"{field}.{name}")


def _inputs(invocation: Invocation, declared: dict, component: str) -> dict:
    _unknown(invocation.inputs, declared, INPUTS, "input", component)
    inputs = {}
    for name, port in declared.items():
        if name in invocation.inputs:
            inputs[name] = invocation.inputs[name]
        elif port.get("default") is not None:
            value = port["default"]
            inputs[name] = {"jobInputType": "literal",
                            "value": str(value).lower() if isinstance(value, bool) else str(value)}
        elif not port.get("optional"):
            raise ValidationFailed(f"{INPUTS}.{name} is missing: pipeline component '{component}' requires input "
                                   f"'{name}' ({port.get('type')}) and it has no default.", target=f"{INPUTS}.{name}")
    return inputs


def _outputs(invocation: Invocation, declared: dict, component: str) -> dict:
    _unknown(invocation.outputs, declared, OUTPUTS, "output", component)
    outputs = {}
    for name, port in declared.items():
        entry = {"jobOutputType": port["type"], "mode": job_mode(port.get("mode"))}
        given = invocation.outputs.get(name)
        if given is not None:
            entry["uri"] = given["uri"]
        outputs[name] = {k: v for k, v in entry.items() if v is not None}
    return outputs


def job_body(name: str, endpoint: str, deployment: str, component: dict, compute_id: str | None, settings: dict,
             invocation: Invocation) -> dict:
    """The pipeline job's PUT body; `component`: the pinned component version's spec; `settings`: the deployment's
    (snake_case, as the SDK sends them)."""
    spec_name = component["name"]
    compute = compute_id.rstrip("/").rsplit("/", 1)[-1] if compute_id else ""
    props = batch_jobs.properties(endpoint, deployment, compute)
    run_settings = {key: settings[key] for key in _SETTINGS if settings.get(key) is not None}
    if compute_id:
        run_settings["default_compute"] = compute_id
    return {"properties": {
        "jobType": "Pipeline", "displayName": name, "experimentName": invocation.experiment or endpoint,
        "description": component.get("description"),
        "tags": {**batch_jobs.tags(endpoint, deployment), "azureml.jobtype": PIPELINE_JOB_TYPE},
        "properties": {**props, "azureml.pipelineComponent": f"{spec_name}:{component['version']}"},
        "inputs": _inputs(invocation, component.get("inputs") or {}, spec_name),
        "outputs": _outputs(invocation, component.get("outputs") or {}, spec_name),
        "jobs": component["jobs"], "settings": {**run_settings, "_source": "BatchDeployment"}}}
