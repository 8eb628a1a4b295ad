"""The images a stack needs, built here from Debian packages and the recipes under images/ (no registry is
reachable): every one for `amlemu build`, only the missing ones when a stack of its own starts (amlemu.start)."""

import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from emulator.cli.stack import BUNDLE, CHECKOUT, PACKAGE, ROOT, emulator_image
from emulator.domain.assets import images
from emulator.runtime.images import ImageBuilder

Progress = Callable[[str], None]
REDIS, MLFLOW = "amlemu/redis:latest", "amlemu/mlflow:latest"


@contextmanager
def emulator_context() -> Iterator[Path]:
    """The emulator image's build context: the checkout itself (.dockerignore keeps it small), or, from a wheel,
    what the Dockerfile copies (pyproject, README, the package) put together in a temporary folder."""
    if CHECKOUT:
        yield ROOT
        return
    with tempfile.TemporaryDirectory(prefix="amlemu-build-") as folder:
        context = Path(folder)
        for name in ("pyproject.toml", "README.md"):
            shutil.copy(BUNDLE / name, context / name)
        shutil.copytree(PACKAGE, context / "emulator", ignore=shutil.ignore_patterns("__pycache__", "bundle"))
        yield context


def build(progress: Progress, *, only_missing: bool = False, monitoring: bool = False, postgres: bool = False,
          hosts: bool = False) -> str:
    """Build the stack's images, cached layers making a rebuild take seconds; with `only_missing`, those that do not
    exist yet. The emulator image's tag is returned."""
    # the folder holding images/, links resolved: a Dockerfile must be inside its build context as it is seen
    builder = ImageBuilder((BUNDLE / "images").resolve().parent, progress)
    builder.ensure_base()
    image = emulator_image()
    recipes = [("redis", REDIS, None), ("mlflow", MLFLOW, None),  # the workspaces' MLflow tracking server
               ("emulator", image, None),
               # Stand-ins for the job base images Azure ML's examples use (python:3.x-slim, AzureML openmpi).
               ("stand-ins/python", images.PYTHON_STAND_IN, None),
               ("stand-ins/azureml", images.AZUREML_STAND_IN, images.PYTHON_STAND_IN),
               ("instance", images.INSTANCE_IMAGE, None)]  # compute instances: JupyterLab, a terminal, sshd
    if monitoring:  # only when asked: the default build (and CI) need no Prometheus
        recipes.append(("prometheus", os.environ.get("AMLEMU_PROMETHEUS_IMAGE", "amlemu/prometheus:latest"), None))
    if postgres:  # only when asked: the stack and the store tests' SQLite need none (make test asks for it)
        recipes.append(("postgres", os.environ.get("AMLEMU_POSTGRES_IMAGE", "amlemu/postgres:latest"), None))
    if hosts:  # only when asked: the attached-compute tests' stand-in remote hosts (tests/hosts.py)
        recipes.append(("host", os.environ.get("AMLEMU_HOST_IMAGE", "amlemu/host:latest"), None))
    for name, tag, base in recipes:
        if only_missing and builder.exists(tag):
            continue
        progress(f"building {tag}")
        if name == "emulator":
            with emulator_context() as context:
                builder.build(name, tag, context=context)
        else:
            builder.build(name, tag, **({"base": base} if base else {}))
    return image
