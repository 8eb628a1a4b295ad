"""The image a job's environment runs in: its base (or the base's stand-in), plus the conda file's packages
installed with pip in an image built once per content hash and reused by every later job."""

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from emulator.domain.assets import curated, environments, images
from emulator.errors import ValidationFailed

Progress = Callable[[str], None]
_STAND_IN_PYTHON = {images.PYTHON_STAND_IN: images.STAND_IN_PYTHON, images.AZUREML_STAND_IN: images.STAND_IN_PYTHON}


class ImageEngine(Protocol):
    """What this service asks of the container engine (runtime.images.EnvironmentImages)."""
    def exists(self, tag: str) -> bool: ...
    def build_environment(self, tag: str, dockerfile: str, files: dict[str, str], progress: Progress) -> str: ...


@dataclass(frozen=True)
class Prepared:
    image: str
    notes: list[str] = field(default_factory=list)  # for the job's log: stand-ins, conda mapped to pip, Python
    built: bool = False                             # False when the image was already there


class EnvironmentResolver:
    """Safe to call from many worker threads: one build per tag at a time, the others wait and reuse it."""

    def __init__(self, engine: ImageEngine):
        self.engine = engine
        self._locks: dict[str, threading.Lock] = {}
        self._locks_guard = threading.Lock()

    def _plan(self, env_body: dict) -> tuple[Prepared, environments.CondaSpec | None, str]:
        """What the environment runs on without building, and what a build would need (spec, base)."""
        if env_body.get("build") is not None:
            raise ValidationFailed("Environments built from a Docker build context (properties.build) are not "
                                   "supported by amlemu yet; use properties.image, with properties.condaFile for "
                                   "pip packages.", target="properties.build")
        base = images.resolve(env_body["image"], self.engine.exists)
        notes = [base.note] if base.note else []
        if stand_in := (env_body.get("tags") or {}).get(curated.NOTE_TAG):  # a curated environment's own difference
            notes.append(f"amlemu: {stand_in}")
        if not env_body.get("condaFile"):
            return Prepared(base.image, notes), None, base.image
        spec = environments.parse_conda(env_body["condaFile"])
        python = environments.python_note(spec, _STAND_IN_PYTHON.get(base.image))
        notes += [*spec.notes, *([python] if python else [])]
        if not spec.requirements:  # python and pip only: the base image is the environment
            return Prepared(base.image, notes), None, base.image
        return Prepared(environments.image_tag(base.image, spec), notes), spec, base.image

    def cached(self, env_body: dict) -> Prepared | None:
        """The prepared environment when nothing needs building (fast: a few engine lookups), else None."""
        prepared, spec, _base = self._plan(env_body)
        return prepared if spec is None or self.engine.exists(prepared.image) else None

    def prepare(self, env_body: dict, progress: Progress) -> Prepared:
        """The image to run for a stored environment version body (keys image, condaFile, build)."""
        prepared, spec, base = self._plan(env_body)
        if spec is None:
            return prepared
        tag = prepared.image
        with self.lock(tag):
            if self.engine.exists(tag):
                return prepared
            progress(f"amlemu: building environment image {tag} on {base} "
                     f"({len(spec.requirements)} pip requirement lines)")
            self._build(tag, base, spec, progress)
        return Prepared(tag, prepared.notes, built=True)

    def lock(self, tag: str) -> threading.Lock:
        """One build at a time of an image tag (serving images take it too)."""
        with self._locks_guard:
            return self._locks.setdefault(tag, threading.Lock())

    def _build(self, tag: str, base: str, spec: environments.CondaSpec, progress: Progress) -> None:
        files = {environments.REQUIREMENTS_FILE: environments.requirements_txt(spec)}
        try:
            self.engine.build_environment(tag, environments.dockerfile(base, spec), files, progress)
        except ValidationFailed as exc:  # a failing pip install: the conda file asked for what cannot install
            raise ValidationFailed(exc.message, target="properties.condaFile") from exc
