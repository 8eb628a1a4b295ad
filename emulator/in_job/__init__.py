"""Code that runs inside jobs' containers, on the user's Python: the standard library only (pandas, when the input
is tabular and the environment has it), nothing of the emulator, which is not installed there.

The parallel runner (parallel_run.py and its modules, with the pure rules of domain/jobs/parallel_rules.py) is
written into the data folder (`install`) by the controller as it starts, under container names (`FILES`) that import
each other as top-level modules; a job whose command runs it gets that folder mounted read-only at
domain.jobs.parallel.RUNNER_DIR (controller/specs/job_ranks.py). Jobs' code never writes there, and a new
emulator's runner reaches the next job without a rebuilt image.
"""

import os
from pathlib import Path

INSTALLED = "in-job/parallel"  # relative to the data folder
_HERE = Path(__file__).resolve().parent
FILES = {
    "amlemu_parallel_run.py": _HERE / "parallel_run.py",
    "amlemu_parallel_agent.py": _HERE / "parallel_agent.py",
    "amlemu_parallel_worker.py": _HERE / "parallel_worker.py",
    "amlemu_parallel_files.py": _HERE / "parallel_files.py",
    "amlemu_parallel_inputs.py": _HERE / "parallel_inputs.py",
    "amlemu_parallel_rules.py": _HERE.parent / "domain" / "jobs" / "parallel_rules.py",
    "azureml_user/__init__.py": _HERE / "azureml_user" / "__init__.py",  # what Azure's scoring scripts import
    "azureml_user/parallel_run.py": _HERE / "azureml_user" / "parallel_run.py",
}


def install(folder: Path) -> Path:
    """The runner's files in `folder` (made readable by all: jobs run as another user), each rewritten only when its
    content changed, whole or not at all (a job may be reading it)."""
    folder.mkdir(parents=True, exist_ok=True)
    folder.chmod(0o755)
    for name, source in FILES.items():
        target, content = folder / name, source.read_bytes()
        if target.is_file() and not target.is_symlink() and target.read_bytes() == content:
            continue
        target.parent.mkdir(exist_ok=True)
        target.parent.chmod(0o755)
        draft = target.with_name(f".{target.name}.{os.getpid()}")
        draft.write_bytes(content)
        draft.chmod(0o644)
        draft.replace(target)
    return folder
