"""Azure ML's curated environments, offline: each name the docs and examples use stands for a local build of its
Python packages (from PyPI, at first use, cached by content) on the Azure ML base image's stand-in. Pure.

A job names one as `azureml:AzureML-<name>@latest` or `:<version>` (the workspace's view of the `azureml`
registry) or as `azureml://registries/azureml/environments/<name>/labels/latest` or `/versions/<version>`.
Package lists follow the families' conda files in github.com/Azure/azureml-assets, as CPU builds that install
on the stand-in's Python 3.11; GPU families run CPU builds of their frameworks and say so in the job's log.
"""

import re
from dataclasses import dataclass, field

from emulator.errors import ValidationFailed

REGISTRY = "azureml"
WORKSPACE_PREFIX = "AzureML-"
LATEST = "1"  # the version `@latest` and `labels/latest` mean here
VERSIONS = (LATEST,)  # what the azureml registry lists of each family (a job may name any other: the same build)
BASE_IMAGE = "mcr.microsoft.com/azureml/openmpi4.1.0-ubuntu22.04:latest"
NOTE_TAG = "amlemu"  # an environment tag the job's log repeats: how the stand-in differs from Azure's build
_MLFLOW = ("mlflow-skinny~=2.17", "azureml-mlflow")
_DATA = ("numpy<2", "pandas~=2.2", "scipy~=1.13", "joblib~=1.4", "matplotlib~=3.9")


@dataclass(frozen=True)
class Curated:
    name: str  # the registry's name
    python: str  # the family's own Python (the stand-in runs 3.11: the job's log says so)
    packages: tuple[str, ...]
    tags: dict[str, str] = field(default_factory=dict)
    note: str | None = None


def _sklearn(name: str, pin: str, python: str, note: str | None = None) -> Curated:
    return Curated(name, python, (f"scikit-learn{pin}", *_DATA, *_MLFLOW),
                   {"Scikit-learn": name.split("-")[1], "Python": python, "OS": "Ubuntu22.04", "Training": ""}, note)


def _minimal(name: str, python: str) -> Curated:
    return Curated(name, python, ("azureml-inference-server-http", *_MLFLOW), {"Python": python, "Inference": ""})


CATALOGUE: dict[str, Curated] = {c.name: c for c in (
    _sklearn("sklearn-1.0", "~=1.1.3", "3.8", "scikit-learn 1.1 stands in for 1.0, which has no build for the "
             "stand-in's Python 3.11."),
    _sklearn("sklearn-1.1", "~=1.1.3", "3.9"),
    _sklearn("sklearn-1.5", "~=1.5.0", "3.10"),
    Curated("lightgbm-3.3", "3.8", ("lightgbm~=3.3.5", "scikit-learn~=1.1.3", *_DATA, *_MLFLOW),
            {"LightGBM": "3.3", "Python": "3.8", "Training": ""}),
    _minimal("minimal-ubuntu20.04-py38-cpu-inference", "3.8"),
    _minimal("minimal-ubuntu22.04-py39-cpu-inference", "3.9"),
    _minimal("minimal-ubuntu22.04-py311-cpu-inference", "3.11"),
    _minimal("minimal-py311-inference", "3.11"),
    Curated("acpt-pytorch-2.2-cuda12.1", "3.10",
            ("--extra-index-url https://download.pytorch.org/whl/cpu", "torch~=2.2.0", "torchvision~=0.17.0",
             *_DATA, *_MLFLOW),
            {"PyTorch": "2.2", "Python": "3.10", "Training": ""},
            "a CPU build of PyTorch 2.2 stands in for the CUDA 12.1 one (no GPU here)."),
    Curated("tensorflow-2.16-cuda12", "3.10", ("tensorflow-cpu~=2.16.1", *_DATA, *_MLFLOW),
            {"TensorFlow": "2.16", "Python": "3.10", "Training": ""},
            "a CPU build of TensorFlow 2.16 stands in for the CUDA 12 one (no GPU here)."),
)}


@dataclass(frozen=True)
class Reference:
    curated: Curated
    version: str
    registry: bool  # named through the registry (azureml://registries/azureml/...), not the workspace

    @property
    def workspace_name(self) -> str:
        return f"{WORKSPACE_PREFIX}{self.curated.name}"


_WORKSPACE_FORM = re.compile(r"^azureml:(?P<name>AzureML-[^:@/]+)(@(?P<label>[^:@/]+)|:(?P<version>[^:@/]+))$",
                             re.IGNORECASE)
_REGISTRY_FORM = re.compile(r"^azureml://registries/(?P<registry>[^/]+)/environments/(?P<name>[^/]+)"
                            r"/(labels/(?P<label>[^/]+)|versions/(?P<version>[^/]+))$", re.IGNORECASE)


def parse(environment_id: str, target: str) -> Reference | None:
    """The curated environment a job names, or None when it names another (a workspace's, a user registry's)."""
    if match := _WORKSPACE_FORM.match(environment_id):
        name, registry = match["name"][len(WORKSPACE_PREFIX):], False
    elif (match := _REGISTRY_FORM.match(environment_id)) and match["registry"].lower() == REGISTRY:
        name, registry = match["name"], True
    else:
        return None
    curated = family(name)
    if curated is None:
        raise ValidationFailed(f"{target}: {unknown(name)}", target=target)
    if match["label"] is not None and match["label"].lower() != "latest":
        raise ValidationFailed(f"{target}: curated environments have the label 'latest' only, not "
                               f"'{match['label']}'.", target=target)
    return Reference(curated, match["version"] or LATEST, registry)


def named(workspace_name: str) -> Curated | None:
    """The family a workspace environment name (`AzureML-<name>`) stands for, if it is one."""
    if not workspace_name.lower().startswith(WORKSPACE_PREFIX.lower()):
        return None
    return family(workspace_name[len(WORKSPACE_PREFIX):])


def family(name: str) -> Curated | None:
    """The family a registry name stands for, matched without case as Azure matches asset names."""
    return next((c for c in CATALOGUE.values() if c.name.lower() == name.lower()), None)


def unknown(name: str) -> str:
    return f"'{name}' is not a curated environment amlemu knows. Known: {', '.join(sorted(CATALOGUE))}."


def conda_file(curated: Curated) -> str:
    pip = "".join(f"  - {package}\n" for package in curated.packages)
    return (f"name: {curated.name}\nchannels:\n- conda-forge\ndependencies:\n- python={curated.python}\n- pip\n"
            f"- pip:\n{pip}")


def environment_body(curated: Curated) -> dict:
    """The environment version the workspace holds for it, as if it had been PUT."""
    tags = {**curated.tags, **({NOTE_TAG: curated.note} if curated.note else {})}
    return {"properties": {"image": BASE_IMAGE, "condaFile": conda_file(curated), "tags": tags,
                           "description": f"Azure ML curated environment {curated.name}, built locally by amlemu "
                                          "from PyPI on the Azure ML base image's stand-in."}}
