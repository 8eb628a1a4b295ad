"""A batch deployment's PUT body, checked and filled with Azure's defaults, and the parallel settings a job of it
runs with. Pure.

Two kinds, as Azure has them:
- a model deployment (`ModelBatchDeployment`, `BatchDeployment`): a model, a compute cluster and the parallel
  settings; with `codeConfiguration` (code + scoring script) and an environment, or, for an MLflow model, neither
  (the model scores itself);
- a pipeline component deployment (`PipelineComponentBatchDeployment`): `deploymentConfiguration` names a
  pipeline component, and `settings` (snake_case, as the SDK sends them) its default compute and datastore.
The stored body keeps the wire names the SDK reads back; `refs` (never shown) is what the service resolves.
"""

import re

from emulator.domain import durations, payload
from emulator.domain.jobs import command_job, parallel
from emulator.domain.jobs.parallel import APPEND_ROW, SUMMARY_ONLY, ParallelSettings
from emulator.domain.serving.deployments import asset_ref
from emulator.errors import ValidationFailed

P = "properties"
MODEL, PIPELINE = "model", "pipeline"
# Azure's defaults (BatchDeploymentProperties in the REST reference; the SDK's own entities send the same).
DEFAULTS = {"miniBatchSize": 10, "maxConcurrencyPerInstance": 1, "errorThreshold": -1, "loggingLevel": "Info",
            "outputAction": "AppendRow", "outputFileName": "predictions.csv"}
DEFAULT_RETRIES = {"maxRetries": 3, "timeout": "PT30S"}
OUTPUT_ACTIONS = {"appendrow": "AppendRow", "summaryonly": "SummaryOnly"}
LOGGING_LEVELS = {"debug": "Debug", "info": "Info", "warning": "Warning"}
_FILE_NAME = re.compile(r"^[^/\\]+$")


def file_name(value: object, target: str) -> str:
    name = payload.required_string(value, target)
    if not _FILE_NAME.fullmatch(name) or name in (".", ".."):
        raise ValidationFailed(f"{target} must be a file name (no folders), got {name!r}.", target=target)
    return name


def _whole(value: object, target: str, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValidationFailed(f"{target} must be a whole number of at least {minimum}, got {value!r}.", target=target)
    return value


def _choice(value: object, choices: dict[str, str], target: str) -> str:
    found = choices.get(value.lower()) if isinstance(value, str) else None
    if found is None:
        raise ValidationFailed(f"{target} must be one of {', '.join(choices.values())}, got {value!r}.", target=target)
    return found


def retry_settings(value: object, target: str) -> dict:
    given = {k: v for k, v in payload.obj(value, target).items() if v is not None}
    retries = {**DEFAULT_RETRIES, **given}
    _whole(retries["maxRetries"], f"{target}.maxRetries", 0)
    if durations.parse_seconds(retries["timeout"], f"{target}.timeout") <= 0:
        raise ValidationFailed(f"{target}.timeout must be longer than PT0S.", target=f"{target}.timeout")
    return {"maxRetries": retries["maxRetries"], "timeout": retries["timeout"]}


def parallel_fields(props: dict, target: str = P) -> dict:
    """The settings every model deployment carries, checked, Azure's defaults where none is given."""
    given = {k: v for k, v in props.items() if v is not None}
    fields = {**DEFAULTS, **{k: given[k] for k in DEFAULTS if k in given}}
    parallel.mini_batch_size(fields["miniBatchSize"], f"{target}.miniBatchSize")
    _whole(fields["maxConcurrencyPerInstance"], f"{target}.maxConcurrencyPerInstance", 1)
    parallel.threshold(fields["errorThreshold"], f"{target}.errorThreshold")
    fields["loggingLevel"] = _choice(fields["loggingLevel"], LOGGING_LEVELS, f"{target}.loggingLevel")
    fields["outputAction"] = _choice(fields["outputAction"], OUTPUT_ACTIONS, f"{target}.outputAction")
    file_name(fields["outputFileName"], f"{target}.outputFileName")
    resources = payload.obj(props.get("resources"), f"{target}.resources")
    count = 1 if resources.get("instanceCount") is None else resources["instanceCount"]
    fields["resources"] = {**resources, "instanceCount": _whole(count, f"{target}.resources.instanceCount", 1),
                           "properties": payload.obj(resources.get("properties"), f"{target}.resources.properties")}
    fields["retrySettings"] = retry_settings(props.get("retrySettings"), f"{target}.retrySettings")
    return fields


def _code(props: dict) -> tuple[dict | None, dict | None]:
    code = payload.obj(props.get("codeConfiguration"), f"{P}.codeConfiguration")
    if not code:
        return None, None
    code_ref = asset_ref(code.get("codeId"), "codes", f"{P}.codeConfiguration.codeId")
    script = payload.required_string(code.get("scoringScript"), f"{P}.codeConfiguration.scoringScript")
    if script.startswith("/") or ".." in script.split("/"):
        raise ValidationFailed(f"{P}.codeConfiguration.scoringScript must be a path inside the code folder, "
                               f"got {script!r}.", target=f"{P}.codeConfiguration.scoringScript")
    return {"codeId": code["codeId"], "scoringScript": script}, vars(code_ref)


def _model_deployment(props: dict) -> tuple[dict, dict]:
    model = payload.obj(props.get("model"), f"{P}.model", required=True)
    kind = model.get("referenceType", "Id")
    if kind != "Id":
        raise ValidationFailed(f"{P}.model.referenceType must be Id (a registered model version), got {kind!r}.",
                               target=f"{P}.model.referenceType")
    model_ref = asset_ref(model.get("assetId"), "models", f"{P}.model.assetId")
    code, code_ref = _code(props)
    environment = payload.string(props.get("environmentId"), f"{P}.environmentId") or None
    if code is not None and environment is None:
        raise ValidationFailed(f"{P}.environmentId is required with a scoring script: the environment it runs in.",
                               target=f"{P}.environmentId")
    env_ref = asset_ref(environment, "environments", f"{P}.environmentId") if environment else None
    shown = {"model": {"referenceType": "Id", "assetId": model["assetId"]}, "codeConfiguration": code,
             "environmentId": environment, **parallel_fields(props)}
    refs = {"model": vars(model_ref), "code": code_ref, "environment": vars(env_ref) if env_ref else None}
    return shown, refs


def _pipeline_deployment(config: dict) -> tuple[dict, dict]:
    target = f"{P}.deploymentConfiguration"
    component = payload.obj(config.get("componentId"), f"{target}.componentId", required=True)
    component_id = payload.required_string(component.get("assetId"), f"{target}.componentId.assetId")
    settings = payload.obj(config.get("settings"), f"{target}.settings")
    shown = {"deploymentConfiguration": {
        "deploymentConfigurationType": "PipelineComponent",
        "componentId": {"referenceType": "Id", "assetId": component_id},
        "settings": settings, "description": payload.string(config.get("description"), f"{target}.description"),
        "tags": payload.string_map(config.get("tags"), f"{target}.tags")}}
    compute = settings.get("default_compute")
    return shown, {"component": component_id,
                   "compute": command_job.arm_child_name(compute, "computes") if isinstance(compute, str) else None}


def validated(body: object) -> dict:
    """The stored deployment: {location, tags, kind, properties (as the SDK reads them back), refs}."""
    body = payload.obj(body, "body", required=True)
    payload.finite(body)
    props = payload.obj(body.get(P), P, required=True)
    config = payload.obj(props.get("deploymentConfiguration"), f"{P}.deploymentConfiguration")
    kind = PIPELINE if config else MODEL
    if kind == PIPELINE:
        declared = config.get("deploymentConfigurationType")
        if declared != "PipelineComponent":
            raise ValidationFailed(f"{P}.deploymentConfiguration.deploymentConfigurationType must be "
                                   f"PipelineComponent, got {declared!r}.",
                                   target=f"{P}.deploymentConfiguration.deploymentConfigurationType")
        shown, refs = _pipeline_deployment(config)
    else:
        shown, refs = _model_deployment(props)
        compute = payload.required_string(props.get("compute"), f"{P}.compute")
        refs["compute"] = command_job.arm_child_name(compute, "computes")
    shown.update(description=payload.string(props.get("description"), f"{P}.description"),
                 properties=payload.string_map(props.get("properties"), f"{P}.properties"),
                 environmentVariables=payload.string_map(props.get("environmentVariables"),
                                                         f"{P}.environmentVariables"))
    return {"location": body.get("location"), "tags": payload.tags(body.get("tags")), "kind": kind, P: shown,
            "refs": refs}


def settings_of(stored: dict, overrides: dict) -> ParallelSettings:
    """What a job of a model deployment runs with: the deployment's settings, with what the invocation overrides
    (`overrides`: checked parallel fields, as parallel_fields returns them for the invocation's own body)."""
    props = {**stored[P], **overrides}
    items, size = parallel.mini_batch_size(props["miniBatchSize"], f"{P}.miniBatchSize")
    code = stored[P]["codeConfiguration"]
    return ParallelSettings(
        entry_script=code["scoringScript"] if code else None, mini_batch_size=items, mini_batch_bytes=size,
        instance_count=props["resources"]["instanceCount"],
        max_concurrency_per_instance=props["maxConcurrencyPerInstance"],
        max_retries=props["retrySettings"]["maxRetries"],
        timeout_seconds=durations.parse_seconds(props["retrySettings"]["timeout"], "retrySettings.timeout"),
        error_threshold=props["errorThreshold"], mini_batch_error_threshold=parallel.UNLIMITED,
        logging_level=props["loggingLevel"].upper(),
        output_action=APPEND_ROW if props["outputAction"] == "AppendRow" else SUMMARY_ONLY,
        output_file_name=props["outputFileName"], program_arguments="")
