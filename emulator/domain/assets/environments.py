"""An environment's conda file, read without conda: what pip installs on top of the base image. Pure.

Azure ML builds `image + condaFile` environments with conda. There is no conda here (nor a registry to
pull one from), so the pip section is installed with pip, plain conda packages are mapped to their PyPI
names and versions, and `python`/`pip` are what the base image has. Each of those choices is a note
that goes to the job's log. The image is built once per content hash: same base, same requirements.
"""

import hashlib
import json
import re
from dataclasses import dataclass

import yaml
from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.utils import canonicalize_name

from emulator.errors import ValidationFailed

ENV_REPOSITORY = "amlemu/env"
LABEL = "amlemu.environment"
REQUIREMENTS_FILE = "requirements.txt"
_RECIPE = "1"  # part of the hash: a change to how images are built rebuilds them all

# channel::name, then a conda version: "=1.26", "=1.26=build", "==1.26.4", ">=1.3,<2", " 1.26.*", " 1.2 build"
_CONDA_SPEC = re.compile(r"^(?:[\w.-]+::)?(?P<name>[A-Za-z0-9_][A-Za-z0-9_.-]*)\s*(?P<version>.*)$")
_PIP_NAMES = {"pytorch": "torch", "pytorch-cpu": "torch", "py-xgboost": "xgboost"}
# Conda packages of native libraries or conda's own plumbing: the base image brings its own or needs none.
_NOT_ON_PYPI = frozenset({"cudatoolkit", "cudnn", "nccl", "pytorch-cuda", "cpuonly", "openmpi", "mpich",
                          "ca-certificates", "openssl", "libgcc-ng", "libstdcxx-ng", "_libgcc_mutex",
                          "_openmp_mutex"})
# Requirement-file options that need nothing but the network; anything else pip accepts there would
# need a file or a checkout the build does not have.
_PIP_OPTIONS = {"-i": "--index-url", "--index-url": "--index-url", "--extra-index-url": "--extra-index-url",
                "-f": "--find-links", "--find-links": "--find-links", "--pre": "--pre",
                "--prefer-binary": "--prefer-binary", "--only-binary": "--only-binary",
                "--no-binary": "--no-binary", "--trusted-host": "--trusted-host"}
_FILE_OPTIONS = ("-r", "--requirement", "-c", "--constraint", "-e", "--editable")
_LOCAL_PATH = re.compile(r"^(\.|/|~|file:)")


@dataclass(frozen=True)
class CondaSpec:
    name: str | None
    python: str | None          # the version the conda file asks for ("3.10", ">=3.8"), None when it does not
    pip: tuple[str, ...]        # the pip section, normalized (options such as --extra-index-url kept as lines)
    mapped: tuple[str, ...]     # plain conda packages as pip requirements
    notes: tuple[str, ...]      # for the job's log

    @property
    def requirements(self) -> tuple[str, ...]:
        """What pip installs, conda's packages first as conda would have installed them before pip's."""
        return self.mapped + self.pip


def parse_conda(text: str, target: str = "properties.condaFile") -> CondaSpec:
    doc = _load(text, target)
    name = doc.get("name")
    if name is not None and not isinstance(name, str):
        raise ValidationFailed(f"{target}: 'name' must be a string, got {name!r}.", target=target)
    dependencies = doc.get("dependencies") or []
    if not isinstance(dependencies, list):
        raise ValidationFailed(f"{target}: 'dependencies' must be a list, got {type(dependencies).__name__}.",
                               target=target)
    python, pip, mapped, skipped = None, [], [], []
    for item in dependencies:
        if isinstance(item, dict):
            pip += _pip_section(item, target)
            continue
        if not isinstance(item, str):
            raise ValidationFailed(f"{target}: each dependency must be a conda package spec or a 'pip:' list, "
                                   f"got {item!r}.", target=target)
        package = _conda_name(item, target)
        if package == "python":
            python = _python(item, target)
        elif package in _NOT_ON_PYPI:
            skipped.append(item.strip())
        elif package != "pip":
            mapped.append((item.strip(), _conda_to_pip(item, target)))
    return CondaSpec(name, python, tuple(pip), tuple(req for _, req in mapped), _notes(mapped, skipped))


def _load(text: str, target: str) -> dict:
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark else ""
        raise ValidationFailed(f"{target} is not valid YAML{where}: {getattr(exc, 'problem', None) or exc}",
                               target=target) from exc
    if not isinstance(doc, dict):
        raise ValidationFailed(f"{target} must be a YAML mapping with 'dependencies' (a conda environment file), "
                               f"got {type(doc).__name__}.", target=target)
    return doc


def _pip_section(item: dict, target: str) -> list[str]:
    if set(item) != {"pip"}:
        raise ValidationFailed(f"{target}: the only mapping allowed in 'dependencies' is 'pip:', got "
                               f"{sorted(map(str, item))}.", target=target)
    lines = item["pip"] or []
    if not isinstance(lines, list) or not all(isinstance(line, str) for line in lines):
        raise ValidationFailed(f"{target}: the 'pip:' section must be a list of requirement strings, "
                               f"got {lines!r}.", target=target)
    return [normalized for line in lines if (normalized := _pip_line(line, target))]


def _pip_line(line: str, target: str) -> str | None:
    line = re.split(r"(?:^|\s)#", line, maxsplit=1)[0].strip()
    if not line:
        return None
    if line.startswith("-"):
        return _pip_option(line, target)
    if _LOCAL_PATH.match(line):
        raise ValidationFailed(f"{target}: pip requirement '{line}' refers to a local path, which an amlemu "
                               "environment build does not have; publish the package or put it in the job's code.",
                               target=target)
    try:
        return _normalized(line)
    except InvalidRequirement as exc:
        hint = " (a URL needs a name: 'name @ URL')" if "://" in line and "@" not in line else ""
        raise ValidationFailed(f"{target}: '{line}' is not a valid pip requirement{hint}: {exc}",
                               target=target) from exc


def _normalized(line: str) -> str:
    """One spelling per requirement ('Scikit_Learn >= 1.3' is 'scikit-learn>=1.3'), so equal lists hash equal."""
    requirement = Requirement(line)
    if requirement.url and requirement.url.startswith("file:"):
        raise InvalidRequirement("it refers to a local file, which an amlemu environment build does not have")
    requirement.name = canonicalize_name(requirement.name)
    return str(requirement)


def _pip_option(line: str, target: str) -> str:
    match = re.fullmatch(r"(--[\w-]+|-\w)[=\s]*(.*)", line)
    option, value = (match[1], match[2].strip()) if match else (line, "")
    if option in _FILE_OPTIONS:
        raise ValidationFailed(f"{target}: pip option '{line}' refers to files or a checkout that an amlemu "
                               "environment build does not have; list the requirements themselves.", target=target)
    if option not in _PIP_OPTIONS:
        raise ValidationFailed(f"{target}: pip option '{option}' is not supported in an amlemu environment; "
                               f"supported: {', '.join(sorted(set(_PIP_OPTIONS.values())))}.", target=target)
    if _PIP_OPTIONS[option] == "--find-links" and not value.startswith(("http://", "https://")):
        raise ValidationFailed(f"{target}: pip option '{line}' needs a local folder that an amlemu environment "
                               "build does not have; use an http(s) URL.", target=target)
    return f"{_PIP_OPTIONS[option]} {value}".strip()


def _conda_name(item: str, target: str) -> str:
    match = _CONDA_SPEC.fullmatch(item.strip())
    if not match:
        raise ValidationFailed(f"{target}: '{item}' is not a conda package spec.", target=target)
    return match["name"].lower()


def _conda_version(item: str) -> tuple[str, str]:
    """(version as written, pip specifier) of a conda spec: '=1.26' means 1.26.*, '==1.26' and ' 1.26' exactly."""
    version = _CONDA_SPEC.fullmatch(item.strip())["version"].strip()
    if not version:
        return "", ""
    if version.startswith(("==", ">", "<", "!=", "~=")):
        return version, version.replace(" ", "")
    fuzzy = version.startswith("=")
    words = version.lstrip("=").replace("=", " ").split()  # the build string, if any, goes
    version = words[0] if words else ""
    if version.endswith("*"):
        return version, "==" + version.rstrip(".*") + ".*"
    return version, "==" + version + (".*" if fuzzy else "")


def _specifier(item: str, target: str) -> str:
    specifier = _conda_version(item)[1]
    try:
        SpecifierSet(specifier)
    except InvalidSpecifier as exc:
        raise ValidationFailed(f"{target}: cannot install conda spec '{item.strip()}' with pip: its version has "
                               "no pip equivalent (use =, ==, >=, <=, <, >, != or a version with .*).",
                               target=target) from exc
    return specifier


def _python(item: str, target: str) -> str | None:
    _specifier(item, target)
    return _conda_version(item)[0] or None


def _conda_to_pip(item: str, target: str) -> str:
    name = _conda_name(item, target)
    try:
        return _normalized(_PIP_NAMES.get(name, name) + _specifier(item, target))
    except InvalidRequirement as exc:
        raise ValidationFailed(f"{target}: cannot install conda spec '{item.strip()}' with pip: {exc}",
                               target=target) from exc


def _notes(mapped: list[tuple[str, str]], skipped: list[str]) -> tuple[str, ...]:
    notes = []
    if mapped:
        notes.append("amlemu: there is no conda here; these conda packages are installed with pip instead: "
                     + ", ".join(f"{conda} -> {pip}" for conda, pip in mapped) + ".")
    if skipped:
        notes.append("amlemu: skipped conda packages that are native libraries pip does not provide (the base "
                     f"image brings its own): {', '.join(skipped)}.")
    return tuple(notes)


def python_note(spec: CondaSpec, runs: str | None) -> str | None:
    """What the job's log says about the conda file's `python=`: `runs` is the base image's, when known."""
    if spec.python is None:
        return None
    if runs is None:
        return (f"amlemu: the conda file asks for python {spec.python}; without conda, packages install into "
                "the base image's own Python (the build log shows its version).")
    written = spec.python if spec.python[0] in "=<>!~" else "=" + spec.python
    if SpecifierSet(_conda_version("python" + written)[1]).contains(runs):
        return None
    return (f"amlemu: the conda file asks for python {spec.python}; without conda, the base image's Python "
            f"{runs} runs instead.")


def _digest(base_image: str, spec: CondaSpec) -> str:
    content = json.dumps([_RECIPE, base_image, sorted(set(spec.requirements))])
    return hashlib.sha256(content.encode()).hexdigest()[:16]


def image_tag(base_image: str, spec: CondaSpec) -> str:
    """The same base and requirements give the same tag, so the image is built once; any change rebuilds."""
    return f"{ENV_REPOSITORY}:{_digest(base_image, spec)}"


def requirements_txt(spec: CondaSpec) -> str:
    return "".join(line + "\n" for line in spec.requirements)


def dockerfile(base_image: str, spec: CondaSpec) -> str:
    """Builds on the local base (never pulled); the requirements come in the build context as a file."""
    return (f"# amlemu environment: {base_image} plus the conda file's packages, installed with pip\n"
            f"FROM {base_image}\n"
            f"COPY {REQUIREMENTS_FILE} /opt/amlemu/{REQUIREMENTS_FILE}\n"
            "RUN python --version \\\n"
            f" && PIP_ROOT_USER_ACTION=ignore pip install --no-cache-dir -r /opt/amlemu/{REQUIREMENTS_FILE}\n"
            f"LABEL {LABEL}={_digest(base_image, spec)}\n")
