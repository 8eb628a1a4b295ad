"""The parallel runner, one per rank of the job (RANK and WORLD_SIZE when there are several): it plans the
mini-batches (once for all ranks and attempts), runs its share with its workers (parallel_agent.py), and on rank 0,
once every rank has ended, writes the output file (append_row: the rows in mini-batch order) and the logs Azure
writes (logs/job_progress_overview.txt, logs/sys/master_role.txt), and exits non-zero naming the failed
mini-batches when a threshold was passed.

    python amlemu_parallel_run.py --input PATH --input-type uri_folder|uri_file|mltable
        (--entry-script SCRIPT | --mlflow-model) (--mini-batch-size N | --mini-batch-bytes N)
        [--output FOLDER --output-type uri_folder|uri_file --output-file-name NAME] [--model PATH]
        [--concurrency N] [--max-retries N] [--timeout SECONDS] [--error-threshold N]
        [--mini-batch-error-threshold N] [--logging-level LEVEL] [--logs FOLDER] [-- SCRIPT ARGUMENTS...]
"""

from __future__ import annotations  # the user's Python may be older than 3.10

import argparse
import os
import socket
import sys
import tempfile
import threading
import time
from datetime import datetime, timezone
from pathlib import Path

import amlemu_parallel_agent as agent
import amlemu_parallel_files as files
import amlemu_parallel_inputs as inputs
import amlemu_parallel_rules as rules

ATTEMPT = "AMLEMU_JOB_ATTEMPT"  # the job's attempt (job_ranks.py): a rerun claims afresh
POLL_SECONDS = 0.2


def arguments(argv: list[str]) -> argparse.Namespace:
    ours, theirs = (argv[:argv.index("--")], argv[argv.index("--") + 1:]) if "--" in argv else (argv, [])
    parser = argparse.ArgumentParser(prog="amlemu_parallel_run")
    parser.add_argument("--input", required=True)
    parser.add_argument("--input-type", default="uri_folder", choices=("uri_folder", "uri_file", inputs.TABULAR))
    parser.add_argument("--entry-script")
    parser.add_argument("--mlflow-model", action="store_true")
    parser.add_argument("--mini-batch-size", type=int)
    parser.add_argument("--mini-batch-bytes", type=int)
    parser.add_argument("--output")
    parser.add_argument("--output-type", default="uri_folder", choices=("uri_folder", "uri_file"))
    parser.add_argument("--output-file-name", default="predictions.csv")
    parser.add_argument("--model")
    parser.add_argument("--concurrency", type=int, default=1)
    parser.add_argument("--max-retries", type=int, default=3)
    parser.add_argument("--timeout", type=float, default=30.0)
    parser.add_argument("--error-threshold", type=int, default=rules.UNLIMITED)
    parser.add_argument("--mini-batch-error-threshold", type=int, default=rules.UNLIMITED)
    parser.add_argument("--logging-level", default="INFO")
    parser.add_argument("--logs", default="logs")
    args = parser.parse_args(ours)
    if not args.entry_script and not args.mlflow_model:
        parser.error("--entry-script or --mlflow-model is required")
    args.program_arguments = theirs
    # Azure's parallel run reads some of its options among the script's arguments (its docs' examples pass them
    # there); the script still gets them all
    azure = argparse.ArgumentParser(add_help=False)
    azure.add_argument("--error_threshold", type=int)
    azure.add_argument("--allowed_failed_percent", type=float)
    found, _ = azure.parse_known_args(theirs)
    if found.error_threshold is not None:
        args.error_threshold = found.error_threshold
    args.allowed_failed_percent = found.allowed_failed_percent
    return args


def node_name() -> str:
    """A node's folder in the logs, as Azure's: its address."""
    try:
        return socket.gethostbyname(socket.gethostname())
    except OSError:
        return socket.gethostname()


def _model_dir(model: str) -> str:
    """AZUREML_MODEL_DIR as Azure sets it: a model file sits right under it, a model folder under it by its name."""
    path = Path(model)
    if path.is_file():
        return str(path.parent)
    home = Path(tempfile.mkdtemp(prefix="amlemu-model-"))
    (home / path.name).symlink_to(path, target_is_directory=True)
    return str(home)


class Run:
    def __init__(self, args: argparse.Namespace):
        self.args = args
        self.rank, self.world = int(os.environ.get("RANK", "0")), int(os.environ.get("WORLD_SIZE", "1"))
        self.folder = files.SharedFolder(Path(args.logs), os.environ.get(ATTEMPT, "0"), self.rank)
        self.node = node_name()
        self._told = 0.0

    def say(self, text: str) -> None:
        """A line of the master role's log (rank 0) and of the job's own log."""
        line = f"{datetime.now(timezone.utc).strftime('%Y-%m-%d %H:%M:%S')} [rank {self.rank}] {text}"
        print(line, flush=True)
        if self.rank == 0:
            files.append(self.folder.logs / "sys" / "master_role.txt", line + "\n")

    def main(self) -> int:
        args = self.args
        if args.model:
            os.environ["AZUREML_MODEL_DIR"] = _model_dir(args.model)
        if args.output:  # EntryScript().output_dir (azureml_user.parallel_run)
            os.environ["AZUREML_PARALLEL_OUTPUT_DIR"] = str(Path(args.output) if args.output_type == "uri_folder"
                                                             else Path(args.output).parent)
        root = Path(args.input)
        plan = self.folder.plan(lambda: inputs.plan(root, args.input_type, args.mini_batch_size,
                                                    args.mini_batch_bytes))
        self.say(f"{len(plan)} mini batches of {sum(b.items for b in plan)} items; "
                 f"{args.concurrency} worker(s) on this node ({self.world} node(s)).")
        if not plan:
            self.say(f"The input {args.input} holds nothing to process.")
            return 1
        config = {"input": args.input, "input_type": args.input_type, "entry_script": args.entry_script,
                  "program_arguments": args.program_arguments, "logging_level": args.logging_level.upper()}
        total = sum(b.items for b in plan)
        try:
            init_error = agent.Agent(self.folder, plan, args, self.node, config,
                                     lambda outcomes: self.verdict(outcomes, total), lambda: self._progressed(plan)).run()
        finally:
            self.folder.rank_ended()
        if init_error:  # the job fails: on every node its init() would
            self.say(f"init() of the entry script failed: {init_error.strip().splitlines()[-1]}")
            return 1
        return self.finish(plan) if self.rank == 0 else 0

    def finish(self, plan: list[rules.MiniBatch]) -> int:
        """Rank 0: once every rank ended, the verdict, the overview, and the output file."""
        stop = threading.Event()
        while len(self.folder.ranks_ended()) < self.world:
            self._overview(plan, finished=False)
            stop.wait(POLL_SECONDS)
        outcomes = self.folder.outcomes()
        result = self._overview(plan, finished=True)
        missing = [b.index for b in plan if b.index not in outcomes]
        if result.stop:
            message = rules.failure_message(result, list(outcomes.values()))
        elif missing:
            message = (f"The parallel run stopped: {len(missing)} mini batches were not processed "
                       f"({', '.join(map(str, missing[:20]))}). See logs/user/error.txt.")
        else:
            self._write_output(plan)
            self.say(f"Completed: {len(plan)} mini batches, {result.failed_items} failed items.")
            return 0
        self.say(message)
        print(message, file=sys.stderr, flush=True)
        return 1

    def _progressed(self, plan: list[rules.MiniBatch]) -> None:
        """Rank 0 keeps the overview current while it works too (at most once a second)."""
        if self.rank == 0 and time.monotonic() - self._told >= 1:
            self._told = time.monotonic()
            self._overview(plan, finished=False)

    def _overview(self, plan: list[rules.MiniBatch], finished: bool) -> rules.Verdict:
        outcomes = list(self.folder.outcomes().values())
        result = self.verdict(outcomes, sum(b.items for b in plan))
        text = rules.overview(len(plan), outcomes, result, finished and len(outcomes) == len(plan))
        files.write_whole(self.folder.logs / "job_progress_overview.txt", text)
        return result

    def verdict(self, outcomes, total: int) -> rules.Verdict:
        args = self.args
        return rules.verdict(outcomes, args.error_threshold, args.mini_batch_error_threshold,
                             args.allowed_failed_percent, total)

    def _write_output(self, plan: list[rules.MiniBatch]) -> None:
        if not self.args.output:
            return  # summary_only: the script writes what it wants
        output = Path(self.args.output)
        target = output if self.args.output_type == "uri_file" else output / self.args.output_file_name
        target.parent.mkdir(parents=True, exist_ok=True)
        draft = target.with_name(f".{target.name}.draft")
        with open(draft, "w") as out:
            for batch in plan:
                out.write(self.folder.rows(batch.index))
        draft.replace(target)


if __name__ == "__main__":
    sys.exit(Run(arguments(sys.argv[1:])).main())
