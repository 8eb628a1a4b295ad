"""Which local image a job's environment image runs on when no registry can be reached.

The base images Azure ML's docs and examples use resolve to stand-ins that `make up` builds, so the
same job files run here and in Azure. An image present locally under its own name always wins.
"""

import re
from collections.abc import Callable
from dataclasses import dataclass

from emulator.errors import ValidationFailed

PYTHON_STAND_IN = "amlemu/python-stand-in:3-slim"
AZUREML_STAND_IN = "amlemu/azureml-stand-in:latest"
INSTANCE_IMAGE = "amlemu/instance:latest"  # compute instances' workstation (images/instance)
STAND_IN_PYTHON = "3.11"  # Debian bookworm's

# Docker Hub's official python image as Docker names it: `python`, `library/python`, `docker.io/library/python`,
# untagged (latest), `latest`, a Python 3 version, slim, a Debian release.
_PYTHON_TAG = r"(latest|slim|3(\.\d+)*(-slim)?)(-(bookworm|bullseye|trixie))?|bookworm|bullseye|trixie"
_STAND_INS: tuple[tuple[re.Pattern, str], ...] = (
    (re.compile(rf"^(docker\.io/)?(library/)?python(:({_PYTHON_TAG}))?$"), PYTHON_STAND_IN),
    (re.compile(r"^mcr\.microsoft\.com/azureml/(openmpi|minimal|base)[A-Za-z0-9._-]*(:[A-Za-z0-9._-]+)?$"),
     AZUREML_STAND_IN),
)


@dataclass(frozen=True)
class Resolved:
    image: str
    note: str | None = None  # said in the job's log when a stand-in runs


def resolve(requested: str, present: Callable[[str], bool]) -> Resolved:
    """The image to run for `requested`; `present` tells whether a tag exists in the local engine."""
    if present(requested):
        return Resolved(requested)
    for pattern, stand_in in _STAND_INS:
        if pattern.fullmatch(requested) and present(stand_in):
            return Resolved(stand_in, f"amlemu: {requested} is not available offline; running on its stand-in "
                                      f"{stand_in} (Debian, Python {STAND_IN_PYTHON}).")
    raise ValidationFailed(
        f"Image '{requested}' is neither present locally, pullable, nor mapped to an amlemu stand-in. "
        f"Provide it with `docker load` or `docker build -t {requested} ...`, or use python:3.11-slim or "
        "mcr.microsoft.com/azureml/openmpi4.1.0-ubuntu22.04, which amlemu maps to local stand-ins.",
        target="properties.image")
