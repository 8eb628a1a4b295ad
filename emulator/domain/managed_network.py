"""A workspace's managed network (`properties.managedNetwork`): its isolation mode and user-defined outbound rules,
checked as Azure checks them, stored, and read back in Azure's shape. amlemu records them; it does not filter the
jobs' traffic by them, so the network reads back `Inactive`, as Azure's does until it is provisioned.
"""

from emulator.domain import payload
from emulator.errors import ValidationFailed

TARGET = "properties.managedNetwork"
MODES = {m.lower(): m for m in ("Disabled", "AllowInternetOutbound", "AllowOnlyApprovedOutbound")}
RULE_TYPES = {t.lower(): t for t in ("FQDN", "PrivateEndpoint", "ServiceTag")}
FIREWALL_SKUS = {s.lower(): s for s in ("Standard", "Basic")}
# Azure adds Required and Recommended rules itself; a user writes UserDefined ones (the SDK drops the others).
USER_DEFINED = "UserDefined"


def _choice(value: object, allowed: dict[str, str], target: str) -> str:
    if not isinstance(value, str) or value.lower() not in allowed:
        raise ValidationFailed(f"{target} must be one of {', '.join(allowed.values())}; got {value!r}.",
                               target=target)
    return allowed[value.lower()]


def _destination(kind: str, value: object, target: str) -> object:
    if kind == "FQDN":
        return payload.required_string(value, target)
    destination = payload.obj(value, target, required=True)
    needed = ("serviceResourceId", "subresourceTarget") if kind == "PrivateEndpoint" else ("serviceTag",)
    for key in needed:
        payload.required_string(destination.get(key), f"{target}.{key}")
    return destination


def _rule(raw: object, mode: str, target: str) -> dict | None:
    """A user-defined rule as stored; None for one of Azure's own (Required, Recommended), read back from it."""
    rule = payload.obj(raw, target, required=True)
    if rule.get("category") not in (None, USER_DEFINED):
        return None
    kind = _choice(rule.get("type"), RULE_TYPES, f"{target}.type")
    if kind == "FQDN" and mode != "AllowOnlyApprovedOutbound":
        raise ValidationFailed(f"{target}: FQDN rules apply to isolationMode AllowOnlyApprovedOutbound only; the "
                               f"network is {mode}.", target=f"{target}.type")
    return {"type": kind, "category": USER_DEFINED,
            "destination": _destination(kind, rule.get("destination"), f"{target}.destination")}


def parse(raw: object, target: str = TARGET) -> dict | None:
    """The managed network as stored; None when the body gives none (it reads back Disabled)."""
    if raw is None:
        return None
    network = payload.obj(raw, target)
    mode = _choice(network.get("isolationMode") or "Disabled", MODES, f"{target}.isolationMode")
    rules = payload.obj(network.get("outboundRules"), f"{target}.outboundRules")
    if rules and mode == "Disabled":
        raise ValidationFailed(f"{target}.outboundRules: outbound rules need an isolationMode other than Disabled.",
                               target=f"{target}.outboundRules")
    checked = {name: _rule(rule, mode, f"{target}.outboundRules.{name}") for name, rule in rules.items()}
    stored = {"isolationMode": mode, "outboundRules": {name: rule for name, rule in checked.items() if rule}}
    if network.get("firewallSku") is not None:
        stored["firewallSku"] = _choice(network["firewallSku"], FIREWALL_SKUS, f"{target}.firewallSku")
    return stored


def shown(stored: dict | None, network_id: str) -> dict:
    """Azure's ManagedNetworkSettings of what is stored."""
    stored = stored or {"isolationMode": "Disabled", "outboundRules": {}}
    rules = {name: {**rule, "status": "Inactive"} for name, rule in stored.get("outboundRules", {}).items()}
    return {**stored, "outboundRules": rules, "networkId": network_id,
            "status": {"status": "Inactive", "sparkReady": False}}
