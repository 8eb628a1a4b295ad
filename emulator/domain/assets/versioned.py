"""Versioned workspace assets (code, environments, models, data): names, body checks, list queries. Pure."""

import re
from dataclasses import dataclass

from emulator.domain import payload
from emulator.domain.assets import data, environments
from emulator.errors import ValidationFailed

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,254}$")
_VERSION = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$")
# A Docker image reference: [host[:port]/]path[:tag][@digest], lower-case repository path.
_IMAGE = re.compile(r"^(?:[A-Za-z0-9.-]+(?::\d+)?/)?[a-z0-9]+(?:[._-]+[a-z0-9]+)*(?:/[a-z0-9]+(?:[._-]+[a-z0-9]+)*)*"
                    r"(?::[\w][\w.-]{0,127})?(?:@sha256:[0-9a-f]{64})?$")
_OS_TYPES = ("Linux", "Windows")
_AUTO_REBUILD = ("Disabled", "OnBaseImageUpdate")
_VIEWS = {"activeonly": "ActiveOnly", "archivedonly": "ArchivedOnly", "all": "All"}
_ORDER = re.compile(r"^\s*createdtime(?:\s+(asc|desc))?\s*$", re.IGNORECASE)
CODE_SPEC = ("codeUri",)
ENVIRONMENT_SPEC = ("image", "build", "condaFile", "osType", "inferenceConfig")
# What a model version is: its files and how they are read. Description, tags, stage, flavors may change.
MODEL_SPEC = ("modelUri", "modelType")
DATA_SPEC = ("dataUri", "dataType")
# The SDK's spellings, and the REST API's (CustomModel, MLFlowModel, TritonModel), compared without case or '_'.
MODEL_TYPES = ("custom_model", "mlflow_model", "triton_model")
DEFAULT_MODEL_TYPE = "custom_model"
DEFAULT_STAGE = "Development"  # what Azure shows for a workspace model registered without a stage


def unprefixed(value: str) -> str:
    """An asset's name without the `azureml:` the SDK leaves on it when it resolves `azureml:<name>@latest`
    (it reads the container `.../data/azureml:<name>`): Azure reads such a name as the asset's own."""
    return value[len("azureml:"):] if value.lower().startswith("azureml:") else value


def name(value: str, target: str = "name") -> str:
    if not _NAME.fullmatch(value):
        raise ValidationFailed(f"Invalid asset name '{value}': 1 to 255 characters, letters, digits, '-', '_' and "
                               "'.', starting with a letter or digit.", target=target)
    return value


def version(value: str) -> str:
    if not _VERSION.fullmatch(value):
        raise ValidationFailed(f"Invalid asset version '{value}': 1 to 128 characters, letters, digits, '-', '_' "
                               "and '.', starting with a letter or digit.", target="version")
    return value


def _flag(value: object, target: str) -> bool:
    if value is None:
        return False
    if not isinstance(value, bool):
        raise ValidationFailed(f"{target} must be true or false.", target=target)
    return value


def _string_map(value: object, target: str) -> dict[str, str]:
    """Asset properties are strings; the SDK sends hash_version as a number, kept as its text."""
    result = payload.obj(value, target)
    for key, item in result.items():
        if not isinstance(item, (str, int, float)) or isinstance(item, bool):
            raise ValidationFailed(f"{target}.{key} must be a string.", target=f"{target}.{key}")
    return {k: str(v) for k, v in result.items()}


def common_fields(body: object) -> tuple[dict, dict]:
    body = payload.obj(body, "body", required=True)
    payload.finite(body)
    props = payload.obj(body.get("properties"), "properties", required=True)
    common = {"description": payload.string(props.get("description"), "properties.description"),
              "tags": _string_map(props.get("tags"), "properties.tags"),
              "properties": _string_map(props.get("properties"), "properties.properties"),
              "isAnonymous": _flag(props.get("isAnonymous"), "properties.isAnonymous"),
              "isArchived": _flag(props.get("isArchived"), "properties.isArchived")}
    return props, common


def code_version(body: object) -> dict:
    props, common = common_fields(body)
    return {**common, "codeUri": payload.required_string(props.get("codeUri"), "properties.codeUri")}


def _build(value: object) -> dict | None:
    if value is None:
        return None
    build = payload.obj(value, "properties.build")
    context = payload.required_string(build.get("contextUri"), "properties.build.contextUri")
    dockerfile = payload.string(build.get("dockerfilePath"), "properties.build.dockerfilePath") or "Dockerfile"
    return {"contextUri": context, "dockerfilePath": dockerfile}


def _image(value: object) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not _IMAGE.fullmatch(value):
        raise ValidationFailed(f"properties.image must be a Docker image reference such as 'python:3.11-slim', "
                               f"got {value!r}.", target="properties.image")
    return value


def _choice(value: object, choices: tuple[str, ...], default: str, target: str) -> str:
    if value is None:
        return default
    if value not in choices:
        raise ValidationFailed(f"{target} must be one of {', '.join(choices)}, got {value!r}.", target=target)
    return value


def environment_version(body: object) -> dict:
    props, common = common_fields(body)
    image, build = _image(props.get("image")), _build(props.get("build"))
    if (image is None) == (build is None):
        raise ValidationFailed("An environment needs exactly one of properties.image or properties.build.",
                               target="properties.image")
    conda = props.get("condaFile")
    if conda is not None:
        conda = payload.required_string(conda, "properties.condaFile")
        environments.parse_conda(conda)  # refused now rather than when a job needs it
        if build is not None:
            raise ValidationFailed("properties.condaFile goes with properties.image; a build context brings its "
                                   "own Dockerfile.", target="properties.condaFile")
    return {**common, "image": image, "build": build, "condaFile": conda,
            "osType": _choice(props.get("osType"), _OS_TYPES, "Linux", "properties.osType"),
            "autoRebuild": _choice(props.get("autoRebuild"), _AUTO_REBUILD, "Disabled", "properties.autoRebuild"),
            "inferenceConfig": payload.obj(props.get("inferenceConfig"), "properties.inferenceConfig") or None}


def _model_type(value: object) -> str:
    if value is None:
        return DEFAULT_MODEL_TYPE
    if not isinstance(value, str) or value.lower().replace("_", "") not in {t.replace("_", "") for t in MODEL_TYPES}:
        raise ValidationFailed(f"properties.modelType must be one of {', '.join(MODEL_TYPES)}, got {value!r}.",
                               target="properties.modelType")
    return value


def _flavors(value: object) -> dict:
    """MLflow flavors, {name: {"data": {...}}}; the SDK reads every entry's `data`, so each must be an object."""
    flavors = payload.obj(value, "properties.flavors")
    for key, flavor in flavors.items():
        target = f"properties.flavors.{key}"
        payload.obj(payload.obj(flavor, target, required=True).get("data"), f"{target}.data")
    return {key: {"data": flavor.get("data") or {}} for key, flavor in flavors.items()}


def model_version(body: object) -> dict:
    """modelUri as given: the service resolves a job's output to the datastore path it lives at. A missing
    stage or jobName is left out rather than nulled, so a PUT without one (the SDK's archive drops stage)
    keeps the stored one."""
    props, common = common_fields(body)
    optional = {key: payload.string(props.get(key), f"properties.{key}") for key in ("stage", "jobName")}
    return {**common, "modelUri": payload.required_string(props.get("modelUri"), "properties.modelUri"),
            "modelType": _model_type(props.get("modelType")), "flavors": _flavors(props.get("flavors")),
            **{key: value for key, value in optional.items() if value is not None}}


def data_version(body: object) -> dict:
    props, common = common_fields(body)
    return data.checked(props, common)


@dataclass(frozen=True)
class ListQuery:
    newest_first: bool = True
    top: int | None = None
    view: str = "ActiveOnly"


def list_query(order_by: str | None, top: str | None, view: str | None) -> ListQuery:
    newest_first = True
    if order_by is not None:
        match = _ORDER.fullmatch(order_by)
        if not match:
            raise ValidationFailed(f"$orderBy supports 'createdtime asc' and 'createdtime desc', got {order_by!r}.",
                                   target="$orderBy")
        newest_first = (match[1] or "asc").lower() == "desc"
    if top is not None and (not top.isdigit() or int(top) < 1):
        raise ValidationFailed(f"$top must be a positive integer, got {top!r}.", target="$top")
    if view is not None and view.lower() not in _VIEWS:
        raise ValidationFailed(f"listViewType must be ActiveOnly, ArchivedOnly or All, got {view!r}.",
                               target="listViewType")
    return ListQuery(newest_first, int(top) if top is not None else None,
                     _VIEWS[view.lower()] if view is not None else "ActiveOnly")


def container_archived(body: object) -> bool:
    """A container PUT (the SDK's archive or restore of every version): only isArchived is read."""
    body = payload.obj(body, "body", required=True)
    props = payload.obj(body.get("properties"), "properties", required=True)
    if not isinstance(props.get("isArchived"), bool):
        raise ValidationFailed("properties.isArchived must be true or false.", target="properties.isArchived")
    return props["isArchived"]


def all_archived(bodies: list[dict]) -> bool:
    """A container is archived when every version is: archiving a container archives them all."""
    return all(b.get("isArchived") for b in bodies)


def next_version(versions: list[str]) -> str:
    numbers = [int(v) for v in versions if v.isdigit()]
    return str(max(numbers) + 1) if numbers else "1"
