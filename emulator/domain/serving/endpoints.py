"""Managed online endpoints and deployments: names, auth modes, traffic rules and the weighted pick. Pure."""

import re
from collections.abc import Iterable, Mapping

from emulator.errors import ValidationFailed

# Endpoint and deployment names: 3-32 characters, a letter first, letters, digits and '-', not ending with '-'
# (the SDK's validate_endpoint_or_deployment_name, and the service's own rule).
_NAME = re.compile(r"^[a-zA-Z][a-zA-Z0-9-]{1,30}[a-zA-Z0-9]$")
AUTH_MODES = {"key": "Key", "amltoken": "AMLToken", "aadtoken": "AADToken"}
MAX_MIRROR_PERCENT = 50  # Azure mirrors at most half of the live traffic


def endpoint_name(value: str) -> str:
    return _name(value, "endpointName", "an endpoint")


def deployment_name(value: str) -> str:
    return _name(value, "deploymentName", "a deployment")


def _name(value: str, target: str, what: str) -> str:
    if not _NAME.fullmatch(value):
        raise ValidationFailed(f"Invalid {target} '{value}': the name of {what} must be 3 to 32 characters, start "
                               "with a letter, then letters, digits and '-', and end with a letter or digit.",
                               target=target)
    return value


def auth_mode(value: object, target: str = "properties.authMode") -> str:
    """Azure's spelling of an auth mode, whatever casing the client sent (the SDK sends 'Key', 'AMLToken')."""
    mode = AUTH_MODES.get(value.lower()) if isinstance(value, str) else None
    if mode is None:
        raise ValidationFailed(f"{target} must be one of {', '.join(AUTH_MODES.values())}, got {value!r}.",
                               target=target)
    return mode


def _percentages(value: object, target: str) -> dict[str, int]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ValidationFailed(f"{target} must be an object of deployment names to percentages.", target=target)
    result = {}
    for name, percent in value.items():
        if isinstance(percent, bool) or not isinstance(percent, int) or not 0 <= percent <= 100:
            raise ValidationFailed(f"{target}.{name} must be a whole percentage from 0 to 100, got {percent!r}.",
                                   target=f"{target}.{name}")
        result[name] = percent
    return result


def _known(traffic: Mapping[str, int], deployments: Iterable[str], target: str, endpoint: str) -> dict[str, int]:
    """Names matched case-insensitively and stored in the deployment's own spelling."""
    spelled = {d.lower(): d for d in deployments}
    result = {}
    for name, percent in traffic.items():
        if name.lower() not in spelled:
            raise ValidationFailed(f"{target} names deployment '{name}', which endpoint '{endpoint}' does not have"
                                   f" (it has: {', '.join(sorted(spelled.values())) or 'none'}).",
                                   target=f"{target}.{name}")
        result[spelled[name.lower()]] = percent
    return result


def traffic(value: object, deployments: Iterable[str], endpoint: str, target: str = "properties.traffic") \
        -> dict[str, int]:
    """Live traffic: existing deployments only, adding up to 100 (or nothing at all: no deployment serves)."""
    result = _known(_percentages(value, target), list(deployments), target, endpoint)
    total = sum(result.values())
    if total not in (0, 100):
        raise ValidationFailed(f"{target} must add up to 100 (or be empty); "
                               f"{' + '.join(f'{n} {p}' for n, p in result.items())} = {total}.", target=target)
    return {name: percent for name, percent in result.items() if percent}


def mirror_traffic(value: object, live: Mapping[str, int], deployments: Iterable[str], endpoint: str,
                   target: str = "properties.mirrorTraffic") -> dict[str, int]:
    """A copy of that share of requests also goes to a deployment that takes no live traffic."""
    result = _known(_percentages(value, target), list(deployments), target, endpoint)
    for name, percent in result.items():
        if percent > MAX_MIRROR_PERCENT:
            raise ValidationFailed(f"{target}.{name} may be at most {MAX_MIRROR_PERCENT} percent, got {percent}.",
                                   target=f"{target}.{name}")
        if percent and live.get(name):
            raise ValidationFailed(f"Deployment '{name}' takes live traffic ({live[name]} percent) and cannot also "
                                   "be mirrored to.", target=f"{target}.{name}")
    return {name: percent for name, percent in result.items() if percent}


def pick(weights: Mapping[str, int], draw: float) -> str | None:
    """The deployment a request goes to: `draw` is uniform in [0, 1); None when no deployment takes traffic."""
    total = sum(weights.values())
    if total <= 0:
        return None
    point = draw * total
    for name, weight in weights.items():
        if point < weight:
            return name
        point -= weight
    return next(name for name, weight in reversed(list(weights.items())) if weight > 0)


def mirrored(mirror: Mapping[str, int], draw: float) -> str | None:
    """The deployment that also gets a copy of this request, if any: each takes its percent of requests."""
    point = draw * 100
    for name, percent in mirror.items():
        if point < percent:
            return name
        point -= percent
    return None
