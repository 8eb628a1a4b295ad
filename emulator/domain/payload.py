"""Checks on request bodies shared by every resource: objects, strings, locations, finite numbers."""

import math
import re

from emulator.errors import ValidationFailed

_LOCATION = re.compile(r"^[A-Za-z0-9 ]{1,64}$")


def obj(value: object, target: str, required: bool = False) -> dict:
    if value is None and not required:
        return {}
    if not isinstance(value, dict):
        raise ValidationFailed(f"{target} must be an object.", target=target)
    return value


def string(value: object, target: str) -> str | None:
    if value is not None and not isinstance(value, str):
        raise ValidationFailed(f"{target} must be a string.", target=target)
    return value


def required_string(value: object, target: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ValidationFailed(f"{target} is required and must be a non-empty string.", target=target)
    return value


def string_map(value: object, target: str) -> dict[str, str]:
    result = obj(value, target)
    for key, item in result.items():
        if not isinstance(item, str):
            raise ValidationFailed(f"{target}.{key} must be a string.", target=f"{target}.{key}")
    return result


def tags(value: object) -> dict[str, str]:
    result = obj(value, "tags")
    if not all(isinstance(v, str) for v in result.values()):
        raise ValidationFailed("tags must be an object of strings.", target="tags")
    return result


def location(value: object, target: str = "location") -> str:
    """ARM locations are names like 'eastus' or 'West Europe'; stored the way ARM normalises them."""
    if not isinstance(value, str) or not _LOCATION.fullmatch(value):
        raise ValidationFailed(f"{target} must be an Azure location name such as 'eastus', got {value!r}.",
                               target=target)
    return value.replace(" ", "").lower()


def finite(value: object, target: str = "body") -> None:
    """JSON parsers accept NaN and Infinity; ARM does not, and they could not be rendered back."""
    if isinstance(value, float) and not math.isfinite(value):
        raise ValidationFailed(f"{target} must be a finite number.", target=target)
    if isinstance(value, dict):
        for key, item in value.items():
            finite(item, f"{target}.{key}" if target != "body" else str(key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            finite(item, f"{target}[{index}]")


def count(value: object, target: str, minimum: int = 1) -> int | None:
    """An optional whole number of things (instances, workers): JSON's true is not one."""
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < minimum):
        raise ValidationFailed(f"{target} must be an integer of at least {minimum}, got {value!r}.", target=target)
    return value
