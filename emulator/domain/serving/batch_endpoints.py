"""Batch endpoints: the PUT body checked and filled as Azure fills it; which deployment an invocation goes to. Pure.

A batch endpoint holds no containers: it is a name, an auth mode (Azure's batch endpoints take Microsoft Entra
tokens only: AADToken), and the deployment an invocation that names none runs (`defaults.deploymentName`).
"""

from collections.abc import Iterable

from emulator.domain import payload
from emulator.domain.serving import endpoints
from emulator.errors import ValidationFailed

P = "properties"
DEFAULTS = f"{P}.defaults.deploymentName"
AUTH_MODE = "AADToken"


def _auth_mode(value: object) -> str:
    mode = endpoints.auth_mode(value if value is not None else AUTH_MODE)
    if mode != AUTH_MODE:
        raise ValidationFailed(f"Batch endpoints authenticate with Microsoft Entra tokens only: {P}.authMode must be "
                               f"AADToken, got {value!r}.", target=f"{P}.authMode")
    return mode


def known_deployment(name: str | None, deployments: Iterable[str], endpoint: str, target: str = DEFAULTS) -> str | None:
    """A deployment name as the endpoint spells it (names match case-insensitively), None for none."""
    if not name:
        return None
    spelled = {d.lower(): d for d in deployments}
    if name.lower() not in spelled:
        raise ValidationFailed(f"{target} names deployment '{name}', which batch endpoint '{endpoint}' does not have "
                               f"(it has: {', '.join(sorted(spelled.values())) or 'none'}).", target=target)
    return spelled[name.lower()]


def validated(body: object, name: str, location: str, deployments: Iterable[str]) -> dict:
    """The stored endpoint: what the user gave, checked, with Azure's defaults. `location`: the workspace's, for a
    body that names none."""
    endpoints.endpoint_name(name)
    body = payload.obj(body, "body", required=True)
    payload.finite(body)
    props = payload.obj(body.get(P), P, required=True)
    defaults = payload.obj(props.get("defaults"), f"{P}.defaults")
    default = known_deployment(payload.string(defaults.get("deploymentName"), DEFAULTS), deployments, name)
    return {"location": location if body.get("location") is None else payload.location(body["location"]),
            "tags": payload.tags(body.get("tags")),
            "identity": payload.obj(body.get("identity"), "identity") or {"type": "SystemAssigned"},
            P: {"authMode": _auth_mode(props.get("authMode")),
                "description": payload.string(props.get("description"), f"{P}.description"),
                "properties": payload.string_map(props.get("properties"), f"{P}.properties"),
                "defaults": {"deploymentName": default}}}


def default_deployment(stored: dict) -> str | None:
    return stored[P]["defaults"]["deploymentName"]


def chosen(header: str | None, stored: dict, deployments: Iterable[str], endpoint: str) -> str:
    """The deployment an invocation runs: the one its `azureml-model-deployment` header names, else the endpoint's
    default; an error naming what is missing when there is neither."""
    names = list(deployments)
    if header:
        return known_deployment(header, names, endpoint, target="azureml-model-deployment")
    default = default_deployment(stored)
    if default is None:
        raise ValidationFailed(f"Batch endpoint '{endpoint}' has no default deployment and the request names none: "
                               f"set {DEFAULTS} (endpoint.defaults.deployment_name) or name a deployment "
                               "(deployment_name=..., the azureml-model-deployment header).", target=DEFAULTS)
    return default
