"""Parallel work, as Azure ML's parallel run step does it: the input split into mini-batches, spread over
`instance_count` nodes × `max_concurrency_per_instance` workers, each mini-batch retried up to `max_retries` times
(or after `timeout`), failed items counted against `error_threshold`, and the rows `run()` returns appended to one
output file. Batch endpoints' jobs (issue 19) and pipelines' `parallel` steps both run it. Pure.

`ParallelSettings` is what both give; `command_body` is the command job (on a cluster, through the same scheduler
as any job) that runs the parallel runner over them. The runner (emulator/in_job/) reaches the job's container as a
read-only mount at RUNNER_DIR, which the job's ranks get when their command runs it (controller/specs/job_ranks.py);
its rules are parallel_rules.py.
"""

import re
import shlex
from dataclasses import dataclass

from emulator.errors import ValidationFailed

APPEND_ROW, SUMMARY_ONLY = "append_row", "summary_only"
UNLIMITED = -1  # a threshold that tolerates any number of failures
RUNNER_DIR = "/mnt/azureml/amlemu-parallel"  # in the job's container, read-only
RUNNER = f"{RUNNER_DIR}/amlemu_parallel_run.py"
BATCH_OUTPUT_FILE = "predictions.csv"  # a batch deployment's outputFileName by default
STEP_OUTPUT_FILE = "parallel_run_step.txt"  # a parallel step's append_row file, as Azure names it
MODEL_INPUT = "model"
LOGGING_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")
_SIZE = re.compile(r"^\s*(\d+)\s*([kmg]b)?\s*$", re.IGNORECASE)
_UNITS = {None: 1, "kb": 1024, "mb": 1024 ** 2, "gb": 1024 ** 3}


@dataclass(frozen=True)
class ParallelSettings:
    entry_script: str | None  # the user's scoring script, relative to the code; None: an MLflow model's own
    mini_batch_size: int | None  # items (files, or rows of tabular input) per mini-batch
    mini_batch_bytes: int | None  # or bytes per mini-batch ("10kb", "1mb"): one of the two is set
    instance_count: int
    max_concurrency_per_instance: int
    max_retries: int
    timeout_seconds: float
    error_threshold: int  # failed items tolerated; -1: any number
    mini_batch_error_threshold: int  # failed mini-batches tolerated; -1: any number
    logging_level: str
    output_action: str  # APPEND_ROW or SUMMARY_ONLY
    output_file_name: str  # predictions.csv by default
    program_arguments: str


def mini_batch_size(value: object, target: str) -> tuple[int | None, int | None]:
    """(items, bytes): a count of items (10, "10"), or a size of tabular data ("10kb", "1MB", "2gb"), as the SDK
    writes them (`^\\d+([kKmMgG][bB])*$`)."""
    if isinstance(value, bool) or value is None:
        match = None
    else:
        match = _SIZE.fullmatch(str(value))
    if match is None or int(match[1]) < 1:
        raise ValidationFailed(f"{target} must be a positive count of items (10) or a size of data ('10kb', '1mb', "
                               f"'1gb'), got {value!r}.", target=target)
    unit = match[2].lower() if match[2] else None
    return (int(match[1]), None) if unit is None else (None, int(match[1]) * _UNITS[unit])


def threshold(value: object, target: str) -> int:
    """A failure count tolerated: -1 (any number) or more."""
    if isinstance(value, bool) or not isinstance(value, int) or value < -1:
        raise ValidationFailed(f"{target} must be -1 (ignore failures) or a count of failures tolerated, got "
                               f"{value!r}.", target=target)
    return value


def logging_level(value: object, target: str) -> str:
    level = str(value or "INFO").upper()
    if level not in LOGGING_LEVELS:
        raise ValidationFailed(f"{target} must be one of {', '.join(LOGGING_LEVELS)}, got {value!r}.", target=target)
    return level


def check(settings: ParallelSettings, target: str) -> None:
    """What no job could run with, said of the setting (`target`: where the settings came from)."""
    if settings.entry_script is not None and not settings.entry_script.strip():
        raise ValidationFailed(f"{target}.entry_script is missing: name the scoring script in the code.",
                               target=f"{target}.entry_script")
    if (settings.mini_batch_size is None) == (settings.mini_batch_bytes is None):
        raise ValidationFailed(f"{target}.mini_batch_size: give a count of items or a size of data.",
                               target=f"{target}.mini_batch_size")
    for name in ("instance_count", "max_concurrency_per_instance"):
        if getattr(settings, name) < 1:
            raise ValidationFailed(f"{target}.{name} must be at least 1.", target=f"{target}.{name}")
    if settings.max_retries < 0 or settings.timeout_seconds <= 0:
        raise ValidationFailed(f"{target}.retry_settings: max_retries must be 0 or more and timeout positive.",
                               target=f"{target}.retry_settings")
    if settings.output_action not in (APPEND_ROW, SUMMARY_ONLY):
        raise ValidationFailed(f"{target}.output_action must be {APPEND_ROW} or {SUMMARY_ONLY}.",
                               target=f"{target}.output_action")
    name = settings.output_file_name
    if settings.output_action == APPEND_ROW and (not name or "/" in name or name in (".", "..")):
        raise ValidationFailed(f"{target}.output_file_name must be a file name, got {name!r}.",
                               target=f"{target}.output_file_name")


def runner_command(settings: ParallelSettings, *, input_ref: str, input_type: str, output_ref: str | None,
                   output_type: str, model_ref: str | None) -> str:
    """The shell command that runs the runner; `*_ref`: what the job's command gives for them (`${{inputs.x}}`)."""
    args = ["python", RUNNER, "--input", input_ref, "--input-type", input_type,
            "--concurrency", str(settings.max_concurrency_per_instance), "--max-retries", str(settings.max_retries),
            "--timeout", f"{settings.timeout_seconds:g}", "--error-threshold", str(settings.error_threshold),
            "--mini-batch-error-threshold", str(settings.mini_batch_error_threshold),
            "--logging-level", settings.logging_level]
    args += (["--mini-batch-size", str(settings.mini_batch_size)] if settings.mini_batch_size is not None
             else ["--mini-batch-bytes", str(settings.mini_batch_bytes)])
    args += ["--entry-script", settings.entry_script] if settings.entry_script else ["--mlflow-model"]
    if settings.output_action == APPEND_ROW and output_ref is not None:
        args += ["--output", output_ref, "--output-type", output_type, "--output-file-name", settings.output_file_name]
    if model_ref is not None:
        args += ["--model", model_ref]
    # placeholders stay unquoted (the job resolves them to paths); the rest is quoted for the shell
    command = " ".join(a if a.startswith("${{") else shlex.quote(a) for a in args)
    extra = settings.program_arguments.strip()  # the script's own arguments (sys.argv), as the job's shell splits them
    return f"{command} -- {extra}" if extra else command


def command_body(settings: ParallelSettings, *, code_id: str | None, environment_id: str, compute_id: str,
                 input_name: str, input_entry: dict, output_uri: str | None, model_id: str | None,
                 environment_variables: dict[str, str], display_name: str, experiment_name: str,
                 model_uri: str | None = None, model_type: str = "custom_model",
                 output_name: str = "score") -> dict:
    """The command job PUT body (as services.jobs.put takes it) that runs the parallel runner over `settings`:
    its input as `input_entry` (a command job's input entry: uri_folder, uri_file or mltable), its aggregated output
    (`output_name`, a folder the output file goes in) at `output_uri` (None: the default), the model's files
    (`model_uri`, a datastore URI: the model version's `modelUri`) mounted read-only as input `model`, with
    AZUREML_MODEL_DIR pointing at them as Azure does; `model_id` (the model version's ARM id) is shown in the job's
    properties."""
    check(settings, "properties")
    input_type = input_entry["jobInputType"]
    inputs = {input_name: {**input_entry, "mode": mounted(input_entry.get("mode"))}}
    model_ref = None
    if model_uri is not None:
        model_input = MODEL_INPUT if input_name != MODEL_INPUT else f"{MODEL_INPUT}_files"
        inputs[model_input] = {"jobInputType": model_type, "uri": model_uri, "mode": "ReadOnlyMount"}
        model_ref = f"${{{{inputs.{model_input}}}}}"
    output = {"jobOutputType": "uri_folder", "mode": "ReadWriteMount", **({"uri": output_uri} if output_uri else {})}
    command = runner_command(settings, input_ref=f"${{{{inputs.{input_name}}}}}", input_type=input_type,
                             output_ref=f"${{{{outputs.{output_name}}}}}", output_type="uri_folder",
                             model_ref=model_ref)
    props = {"jobType": "Command", "command": command, "environmentId": environment_id, "computeId": compute_id,
             "inputs": inputs, "outputs": {output_name: output}, "environmentVariables": dict(environment_variables),
             "resources": {"instanceCount": settings.instance_count}, "displayName": display_name,
             "experimentName": experiment_name,
             "properties": {"azureml.parallelRun": "true", **({"azureml.modelId": model_id} if model_id else {})}}
    if code_id:
        props["codeId"] = code_id
    return {"properties": props}


def mounted(mode: str | None) -> str:
    """The runner reads the input's files: a mount or a copy, never the bare URI (mltable's `direct`)."""
    return mode if mode in ("ReadOnlyMount", "Download", "EvalMount", "EvalDownload") else "ReadOnlyMount"
