"""One worker process of the parallel run: it imports the user's scoring script once, calls its `init()`, then its
`run(mini_batch)` for each mini-batch its agent sends, and `shutdown()` (when defined) at the end, as Azure's
parallel run step does. Its stdout and stderr are the files Azure names (logs/user/stdout/<node>/<process>.stdout.txt,
logs/user/stderr/...), and `logging` goes there at the run's logging level.

run() gets a list of file paths, or a pandas DataFrame for tabular input, and returns a list (one element per
success, written as one line) or a DataFrame (one row per success). A deployment of an MLflow model with no scoring
script runs the model's own: each file read as a table and predicted, as Azure's generated script does.
"""

from __future__ import annotations  # the user's Python may be older than 3.10

import importlib.util
import logging
import os
import sys
import traceback
from pathlib import Path

import amlemu_parallel_inputs as inputs
import amlemu_parallel_rules as rules


def _redirect(stdout: Path, stderr: Path) -> None:
    for path, fd in ((stdout, 1), (stderr, 2)):
        path.parent.mkdir(parents=True, exist_ok=True)
        target = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        os.dup2(target, fd)
        os.close(target)
    sys.stdout = os.fdopen(1, "w", buffering=1, closefd=False)
    sys.stderr = os.fdopen(2, "w", buffering=1, closefd=False)


def _script(path: str):
    """The user's entry script as a module, its folder and the working directory importable, as Azure has them."""
    script = Path(path).resolve()
    for folder in (str(script.parent), os.getcwd()):
        if folder not in sys.path:
            sys.path.insert(0, folder)
    spec = importlib.util.spec_from_file_location(script.stem, script)
    module = importlib.util.module_from_spec(spec)
    sys.modules[script.stem] = module
    spec.loader.exec_module(module)
    if not callable(getattr(module, "run", None)):
        raise AttributeError(f"The entry script {path} defines no run(mini_batch) function.")
    return module


class MlflowModel:
    """An MLflow model's own scoring: each file (csv or parquet) predicted, one row per input row."""

    def init(self) -> None:
        import mlflow.pyfunc
        root = Path(os.environ["AZUREML_MODEL_DIR"])
        found = sorted(p.parent for p in root.rglob("MLmodel"))
        if not found:
            raise FileNotFoundError(f"No MLmodel file under AZUREML_MODEL_DIR ({root}): not an MLflow model.")
        self.model = mlflow.pyfunc.load_model(str(found[0]))

    def run(self, mini_batch):
        import pandas
        frames = []
        for path in mini_batch:
            data = pandas.read_parquet(path) if path.endswith(".parquet") else pandas.read_csv(path)
            predicted = pandas.DataFrame({"row": range(len(data)), "prediction": list(self.model.predict(data)),
                                          "file": os.path.basename(path)})
            frames.append(predicted)
        return pandas.concat(frames, ignore_index=True) if frames else pandas.DataFrame()


def _returned(value) -> tuple[int, str]:
    """(successes, their lines) of what run() returned."""
    if isinstance(value, (list, tuple)):
        return len(value), rules.rows_text(value)
    if type(value).__name__ == "DataFrame" and hasattr(value, "to_csv"):
        return len(value), value.to_csv(sep=" ", header=False, index=False)
    raise TypeError(f"run() must return a list or a pandas DataFrame, got {type(value).__name__}.")


def serve(conn, config: dict) -> None:
    """The worker's life: init, then mini-batches until told to stop (or killed: a timeout)."""
    _redirect(Path(config["stdout"]), Path(config["stderr"]))
    sys.argv = [config["entry_script"] or "mlflow_score", *config["program_arguments"]]
    logging.basicConfig(level=config["logging_level"], stream=sys.stdout,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    root = Path(config["input"])
    table = inputs.Table(root) if config["input_type"] == inputs.TABULAR else None
    try:
        scorer = _script(config["entry_script"]) if config["entry_script"] else MlflowModel()
        if callable(getattr(scorer, "init", None)):
            scorer.init()
    except BaseException:  # noqa: BLE001 - whatever init() raises is the user's, told to the agent
        traceback.print_exc()
        conn.send(("init_failed", traceback.format_exc()))
        return
    conn.send(("ready",))
    frames: dict = {}
    while True:
        message = conn.recv()
        if message[0] == "stop":
            break
        batch = rules.MiniBatch.from_json(message[1])
        try:
            items = (table.frame(batch, frames) if table is not None
                     else [inputs.path_of(root, part.path) for part in batch.parts])
            succeeded, rows = _returned(scorer.run(items))
            conn.send(("done", batch.index, succeeded, rows))
        except Exception:  # noqa: BLE001 - the mini-batch failed this try; the agent decides what comes next
            traceback.print_exc()
            conn.send(("error", batch.index, traceback.format_exc()))
    if callable(getattr(scorer, "shutdown", None)):
        scorer.shutdown()
