"""Parallel work, as Azure ML's parallel run step does it: the input split into mini-batches, spread over
`instance_count` nodes × `max_concurrency_per_instance` workers, each mini-batch retried up to `max_retries` times
(or after `timeout`), failed items counted against `error_threshold`, and the rows `run()` returns appended to one
output file. Batch endpoints' jobs (issue 19) and pipelines' `parallel` steps both run it. Pure.

`ParallelSettings` is what both give; `command_body` is the command job (on a cluster, through the same scheduler
as any job) that runs the parallel runner over them.
"""

from dataclasses import dataclass

APPEND_ROW, SUMMARY_ONLY = "append_row", "summary_only"


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


def command_body(settings: ParallelSettings, *, code_id: str | None, environment_id: str, compute_id: str,
                 input_name: str, input_entry: dict, output_uri: str | None, model_id: str | None,
                 environment_variables: dict[str, str], display_name: str, experiment_name: str) -> dict:
    """The command job PUT body (as services.jobs.put takes it) that runs the parallel runner over `settings`:
    its input as `input_entry` (a command job's input entry), its aggregated output (`score`) at `output_uri` (None:
    the default), the model (if any) mounted where AZUREML_MODEL_DIR points."""
    raise NotImplementedError("issue 19: the parallel runner")
