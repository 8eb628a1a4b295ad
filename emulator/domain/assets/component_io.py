"""A component's inputs and outputs, as its spec declares them (the SDK's YAML spellings). Pure.

Primitive inputs (string, integer, number, boolean) carry defaults, and integers and numbers a range; a string may
be an enum. Asset inputs and outputs (uri_file, uri_folder, mltable, models) carry a delivery mode. The SDK sends
defaults and bounds as strings ("0.01", "100"): they are checked as the type reads them and kept as sent.
"""

import math
from collections.abc import Callable

from emulator.domain import payload
from emulator.domain.jobs import placeholders
from emulator.errors import ValidationFailed

PRIMITIVES = ("string", "integer", "number", "boolean")
ASSETS = ("uri_file", "uri_folder", "mltable", "custom_model", "mlflow_model", "triton_model")
INPUT_TYPES = PRIMITIVES + ASSETS
# Outputs of primitive types are what a step hands a later one (or a control-flow node) as a value.
OUTPUT_TYPES = ASSETS + PRIMITIVES
INPUT_MODES = ("ro_mount", "download", "direct", "eval_mount", "eval_download")
OUTPUT_MODES = ("rw_mount", "upload", "direct")
_RANGED = ("integer", "number")


def _integer(value: object) -> float:
    if isinstance(value, bool):
        raise ValueError(value)
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.strip().lstrip("+-").isdigit():
        return int(value)
    raise ValueError(value)


def _number(value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise ValueError(value)
    number = float(value)
    if not math.isfinite(number):
        raise ValueError(value)
    return number


def _boolean(value: object) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in ("true", "false"):
        return value.lower() == "true"
    raise ValueError(value)


def _string(value: object) -> str:
    if isinstance(value, (dict, list)) or value is None:
        raise ValueError(value)
    return str(value)


_READERS: dict[str, Callable[[object], object]] = {"integer": _integer, "number": _number, "boolean": _boolean,
                                                   "string": _string}
_SAYS = {"integer": "an integer", "number": "a finite number", "boolean": "true or false", "string": "a string"}


def _read(kind: str, value: object, target: str) -> object:
    try:
        return _READERS[kind](value)
    except ValueError:
        raise ValidationFailed(f"{target} must be {_SAYS[kind]} (the input's type is {kind}), got {value!r}.",
                               target=target) from None


def _kind(entry: dict, types: tuple[str, ...], target: str) -> str:
    given = entry.get("type")
    # Azure echoes primitive types as the REST API spells them (String, Integer ...): read either way.
    kind = given.lower() if isinstance(given, str) and given.lower() in PRIMITIVES else given
    if kind not in types:
        raise ValidationFailed(f"{target}.type must be one of {', '.join(types)}, got {given!r}.",
                               target=f"{target}.type")
    return kind


def _optional(entry: dict, target: str) -> None:
    if entry.get("optional") is not None and not isinstance(entry["optional"], bool):
        raise ValidationFailed(f"{target}.optional must be true or false, got {entry['optional']!r}.",
                               target=f"{target}.optional")


def _mode(entry: dict, kind: str, modes: tuple[str, ...], target: str) -> None:
    mode = entry.get("mode")
    if mode is None:
        return
    if kind in PRIMITIVES:
        raise ValidationFailed(f"{target}.mode applies to data and model {target.split('.')[-2]}, not to a {kind}.",
                               target=f"{target}.mode")
    if mode not in modes:
        raise ValidationFailed(f"{target}.mode must be one of {', '.join(modes)}, got {mode!r}.",
                               target=f"{target}.mode")


def _enum(entry: dict, kind: str, target: str) -> list[str] | None:
    values = entry.get("enum")
    if values is None:
        return None
    if kind != "string":
        raise ValidationFailed(f"{target}.enum applies to string inputs, not to a {kind}.", target=f"{target}.enum")
    if not isinstance(values, list) or not values or not all(isinstance(v, str) for v in values):
        raise ValidationFailed(f"{target}.enum must be a non-empty list of strings, got {values!r}.",
                               target=f"{target}.enum")
    return values


def _range(entry: dict, kind: str, target: str) -> tuple[float | None, float | None]:
    bounds = []
    for key in ("min", "max"):
        value = entry.get(key)
        if value is not None and kind not in _RANGED:
            raise ValidationFailed(f"{target}.{key} applies to integer and number inputs, not to a {kind}.",
                                   target=f"{target}.{key}")
        bounds.append(None if value is None else _read(kind, value, f"{target}.{key}"))
    low, high = bounds
    if low is not None and high is not None and low > high:
        raise ValidationFailed(f"{target}.min ({entry['min']}) is greater than its max ({entry['max']}).",
                               target=f"{target}.min")
    return low, high


def _default(entry: dict, kind: str, target: str) -> None:
    value = entry.get("default")
    if value is None:
        return
    where = f"{target}.default"
    if kind not in PRIMITIVES:
        payload.string(value, where)  # a data path or URI
        return
    read = _read(kind, value, where)
    choices = _enum(entry, kind, target)
    if choices is not None and read not in choices:
        raise ValidationFailed(f"{where} {value!r} is not one of the input's enum: {', '.join(choices)}.",
                               target=where)
    low, high = _range(entry, kind, target)
    if (low is not None and read < low) or (high is not None and read > high):
        raise ValidationFailed(f"{where} {value!r} is outside the input's range [{entry.get('min', '')}, "
                               f"{entry.get('max', '')}].", target=where)


def _input(entry: dict, target: str) -> dict:
    kind = _kind(entry, INPUT_TYPES, target)
    _optional(entry, target)
    _mode(entry, kind, INPUT_MODES, target)
    _enum(entry, kind, target)
    _range(entry, kind, target)
    _default(entry, kind, target)
    return entry


def _output(entry: dict, target: str) -> dict:
    kind = _kind(entry, OUTPUT_TYPES, target)
    _mode(entry, kind, OUTPUT_MODES, target)
    for key in ("path", "description"):
        payload.string(entry.get(key), f"{target}.{key}")
    return entry


def _declared(value: object, target: str, check: Callable[[dict, str], dict]) -> dict[str, dict]:
    """Names are identifiers (a placeholder names them), unique without case, as the SDK checks them."""
    entries = payload.obj(value, target)
    seen: dict[str, str] = {}
    for name, entry in entries.items():
        where = f"{target}.{name}"
        if not placeholders.valid_name(name):
            raise ValidationFailed(f"Invalid name '{name}' in {target}: letters, digits and '_', not starting with "
                                   "a digit.", target=where)
        if name.lower() in seen:
            raise ValidationFailed(f"{target} declares '{seen[name.lower()]}' and '{name}', which are equal ignoring "
                                   "case.", target=where)
        seen[name.lower()] = name
        check(payload.obj(entry, where, required=True), where)
        payload.string(entry.get("description"), f"{where}.description")
    return entries


def inputs(value: object, target: str) -> dict[str, dict]:
    return _declared(value, target, _input)


def outputs(value: object, target: str) -> dict[str, dict]:
    return _declared(value, target, _output)
