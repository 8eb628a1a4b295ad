"""The sample jobs' own code, loaded from sample_jobs/ (they are scripts, not packages)."""

import importlib.util
from pathlib import Path

CHECKPOINTING = Path(__file__).resolve().parents[1] / "sample_jobs" / "checkpointing" / "src" / "train.py"


def checkpointing_job(cluster: str, steps: int, step_seconds: float, experiment: str):
    """sample_jobs/checkpointing/job.yml on `cluster`, `steps` steps of `step_seconds` each."""
    from azure.ai.ml import load_job

    return load_job(CHECKPOINTING.parents[1] / "job.yml", params_override=[
        {"compute": f"azureml:{cluster}"}, {"inputs.steps": steps}, {"inputs.step_seconds": step_seconds},
        {"experiment_name": experiment}])


def checkpointing_result(steps: int) -> dict:
    """What sample_jobs/checkpointing writes to outputs/result.json after `steps` steps nothing disturbed."""
    spec = importlib.util.spec_from_file_location("checkpointing_train", CHECKPOINTING)
    train = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(train)
    state, data = train.initial_state(), train.make_data()
    for _ in range(steps):
        state = train.train_step(state, data)
    return {"a": state["a"], "b": state["b"], "loss": state["loss"], "steps": state["step"]}
