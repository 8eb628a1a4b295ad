"""Pipelines' parallel steps (`parallel_run_function`, YAML `type: parallel`): a `parallel` component's fields checked
when it is registered, and a step's settings (its own fields over its component's, then Azure's defaults) made into
the command its child job runs: the parallel runner (parallel.py) over the input `input_data` binds, appending rows
to the output `task.append_row_to` binds (none: summary only). Pure.

The SDK writes both in snake_case: `mini_batch_size` (a count, or a size such as "10kb"; a step's already in bytes),
`error_threshold`, `mini_batch_error_threshold`, `max_concurrency_per_instance`, `retry_settings` ({max_retries,
timeout}), `logging_level`, `input_data` (`${{inputs.x}}`), `partition_keys` and `task` ({type: run_function, code,
entry_script, environment, program_arguments, append_row_to}).
"""

import re
from collections.abc import Mapping

from emulator.domain import payload
from emulator.domain.jobs import parallel, placeholders
from emulator.errors import ValidationFailed

FIELDS = ("mini_batch_size", "error_threshold", "mini_batch_error_threshold", "max_concurrency_per_instance",
          "retry_settings", "logging_level", "input_data", "task", "partition_keys")
TASK_TYPE = "run_function"
# Azure's defaults for a parallel job (its YAML reference).
DEFAULT_FILES_PER_BATCH, DEFAULT_MAX_RETRIES, DEFAULT_TIMEOUT = 10, 2, 60.0
_BINDING = re.compile(r"^\s*\$\{\{\s*(inputs|outputs)\.([A-Za-z_][A-Za-z0-9_]*)\s*\}\}\s*$")


def fields(source: Mapping) -> dict:
    """The parallel fields a step or component body holds (None: not given)."""
    return {key: source.get(key) for key in FIELDS if source.get(key) is not None}


def _bound(value: object, kind: str, declared: Mapping, target: str) -> str:
    """The input (or output) a `${{inputs.x}}` names, which must be declared."""
    match = _BINDING.fullmatch(value) if isinstance(value, str) else None
    if match is None or match[1] != kind:
        raise ValidationFailed(f"{target} must bind one of the step's {kind} as ${{{{{kind}.<name>}}}}, got "
                               f"{value!r}.", target=target)
    if match[2] not in declared:
        raise ValidationFailed(f"{target} binds {kind[:-1]} '{match[2]}', which the component does not declare "
                               f"(its {kind}: {', '.join(sorted(declared)) or 'none'}).", target=target)
    return match[2]


def _retry(value: object, target: str) -> tuple[int | None, float | None]:
    retry = payload.obj(value, target)
    retries, timeout = retry.get("max_retries"), retry.get("timeout")
    retries = None if retries is None else _whole(retries, f"{target}.max_retries", 0)
    if timeout is not None:
        try:
            timeout = float(timeout)
        except (TypeError, ValueError):
            timeout = -1.0
        if isinstance(retry.get("timeout"), bool) or not 0 < timeout < 10 ** 7:
            raise ValidationFailed(f"{target}.timeout must be a positive number of seconds, got "
                                   f"{retry.get('timeout')!r}.", target=f"{target}.timeout")
    return retries, timeout


def _whole(value: object, target: str, minimum: int) -> int:
    """An integer, or its digits as the SDK sometimes sends them."""
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValidationFailed(f"{target} must be an integer of at least {minimum}, got {value!r}.", target=target)
    return value


def check(given: Mapping, target: str, inputs: Mapping, outputs: Mapping, whole: bool) -> None:
    """A component's (`whole`: task with its entry script and environment) or a step's parallel fields."""
    if given.get("partition_keys") is not None:
        raise ValidationFailed(f"{target}.partition_keys: amlemu does not partition by keys yet; use mini_batch_size.",
                               target=f"{target}.partition_keys")
    if given.get("mini_batch_size") is not None:
        parallel.mini_batch_size(given["mini_batch_size"], f"{target}.mini_batch_size")
    for key in ("error_threshold", "mini_batch_error_threshold"):
        if given.get(key) is not None:
            parallel.threshold(_whole(given[key], f"{target}.{key}", -1), f"{target}.{key}")
    if given.get("max_concurrency_per_instance") is not None:
        _whole(given["max_concurrency_per_instance"], f"{target}.max_concurrency_per_instance", 1)
    _retry(given.get("retry_settings"), f"{target}.retry_settings")
    if given.get("logging_level") is not None:
        parallel.logging_level(given["logging_level"], f"{target}.logging_level")
    if whole or given.get("input_data") is not None:
        _bound(given.get("input_data"), "inputs", inputs, f"{target}.input_data")
    _task(payload.obj(given.get("task"), f"{target}.task", required=whole), f"{target}.task", inputs, outputs, whole)


def _task(task: dict, target: str, inputs: Mapping, outputs: Mapping, whole: bool) -> None:
    if task.get("type") not in (None, TASK_TYPE):
        raise ValidationFailed(f"{target}.type must be '{TASK_TYPE}', got {task.get('type')!r}.", target=f"{target}.type")
    if whole:
        payload.required_string(task.get("entry_script"), f"{target}.entry_script")
        payload.required_string(task.get("environment"), f"{target}.environment")
    # a step's task may repeat its component's code and environment in any form: the component's pinned ones run
    for key in ("entry_script", "program_arguments", *(("code", "environment") if whole else ())):
        payload.string(task.get(key), f"{target}.{key}")
    if task.get("entry_script") is not None and not task["entry_script"].strip():
        raise ValidationFailed(f"{target}.entry_script is empty: name the script in the code.",
                               target=f"{target}.entry_script")
    if task.get("append_row_to") is not None:
        _bound(task["append_row_to"], "outputs", outputs, f"{target}.append_row_to")
    arguments = task.get("program_arguments") or ""
    unknown = sorted(f"{group}.{name}" for group, name in placeholders.references(arguments)
                     if name not in {"inputs": inputs, "outputs": outputs}[group])
    if unknown:
        raise ValidationFailed(f"{target}.program_arguments refers to {', '.join(unknown)}, which the component "
                               "does not declare.", target=f"{target}.program_arguments")


def merged(component: Mapping, step: Mapping) -> dict:
    """The step's fields over its component's (its task's keys over the component task's)."""
    result = {**component, **step}
    result["task"] = {**(component.get("task") or {}), **(step.get("task") or {})}
    return result


def settings(given: Mapping, instance_count: int, target: str) -> parallel.ParallelSettings:
    """A step's settings (`given`: merged fields), Azure's defaults where none is given."""
    items, size = (DEFAULT_FILES_PER_BATCH, None) if given.get("mini_batch_size") is None else \
        parallel.mini_batch_size(given["mini_batch_size"], f"{target}.mini_batch_size")
    retries, timeout = _retry(given.get("retry_settings"), f"{target}.retry_settings")
    task = given.get("task") or {}
    result = parallel.ParallelSettings(
        entry_script=task.get("entry_script"), mini_batch_size=items, mini_batch_bytes=size,
        instance_count=instance_count,
        max_concurrency_per_instance=_whole(given.get("max_concurrency_per_instance", 1),
                                            f"{target}.max_concurrency_per_instance", 1),
        max_retries=DEFAULT_MAX_RETRIES if retries is None else retries,
        timeout_seconds=DEFAULT_TIMEOUT if timeout is None else timeout,
        error_threshold=_whole(given.get("error_threshold", parallel.UNLIMITED), f"{target}.error_threshold", -1),
        mini_batch_error_threshold=_whole(given.get("mini_batch_error_threshold", parallel.UNLIMITED),
                                          f"{target}.mini_batch_error_threshold", -1),
        logging_level=parallel.logging_level(given.get("logging_level"), f"{target}.logging_level"),
        output_action=parallel.APPEND_ROW if task.get("append_row_to") else parallel.SUMMARY_ONLY,
        output_file_name=parallel.STEP_OUTPUT_FILE, program_arguments=task.get("program_arguments") or "")
    if result.entry_script is None:
        raise ValidationFailed(f"{target}.task.entry_script is missing: a parallel step runs a scoring script.",
                               target=f"{target}.task.entry_script")
    parallel.check(result, target)
    return result


def command(given: Mapping, result: parallel.ParallelSettings, inputs: Mapping[str, dict],
            outputs: Mapping[str, dict], target: str) -> str:
    """The child's command: the runner over the bound input, appending to the bound output. `inputs`, `outputs`:
    the child's entries (camelCase), whose types say how the runner reads and writes them."""
    name = _bound(given.get("input_data"), "inputs", inputs, f"{target}.input_data")
    append = (given.get("task") or {}).get("append_row_to")
    output = _bound(append, "outputs", outputs, f"{target}.task.append_row_to") if append else None
    return parallel.runner_command(
        result, input_ref=f"${{{{inputs.{name}}}}}", input_type=inputs[name]["jobInputType"],
        output_ref=f"${{{{outputs.{output}}}}}" if output else None,
        output_type=outputs[output]["jobOutputType"] if output else "uri_folder", model_ref=None)


def input_name(given: Mapping) -> str | None:
    match = _BINDING.fullmatch(given.get("input_data") or "")
    return match[2] if match else None
