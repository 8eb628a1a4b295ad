"""Azure's `Microsoft.Authorization/roleAssignments` at a workspace's scope: what a PUT must hold, and the ARM
shapes of assignments and built-in role definitions."""

import re
from dataclasses import dataclass

from emulator.domain.roles import ROLES, RoleDefinition
from emulator.errors import BadRequest, ValidationFailed

AUTHORIZATION = "Microsoft.Authorization"
PRINCIPAL_TYPES = ("User", "Group", "ServicePrincipal", "ForeignGroup", "Device")
_GUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", re.IGNORECASE)
_DEFINITION_ID = re.compile(rf"(?:/subscriptions/[^/]+)?/providers/{AUTHORIZATION}/roleDefinitions/([^/]+)",
                            re.IGNORECASE)


@dataclass(frozen=True)
class Assignment:
    role: RoleDefinition
    principal_id: str
    principal_type: str


def definition_id(subscription: str, role: RoleDefinition) -> str:
    return f"/subscriptions/{subscription}/providers/{AUTHORIZATION}/roleDefinitions/{role.id}"


def assignment_id(scope: str, name: str) -> str:
    return f"{scope}/providers/{AUTHORIZATION}/roleAssignments/{name}"


def check_name(name: str) -> str:
    if not _GUID.fullmatch(name):
        raise BadRequest(f"The role assignment ID '{name}' is not valid. The role assignment ID must be a GUID.",
                         code="InvalidRoleAssignmentId", target="name")
    return name.lower()


def parse(body: object) -> Assignment:
    """A PUT's body: {"properties": {"roleDefinitionId", "principalId", "principalType"?}}."""
    props = body.get("properties") if isinstance(body, dict) else None
    if not isinstance(props, dict):
        raise ValidationFailed("The request body must have 'properties'.", target="properties")
    definition = props.get("roleDefinitionId")
    match = _DEFINITION_ID.fullmatch(definition) if isinstance(definition, str) else None
    role = next((r for r in ROLES if match and r.id == match[1].lower()), None)
    if role is None:
        raise BadRequest(f"The specified role definition with ID '{definition}' does not exist.",
                         code="RoleDefinitionDoesNotExist", target="properties.roleDefinitionId")
    principal = props.get("principalId")
    if not isinstance(principal, str) or not _GUID.fullmatch(principal):
        raise BadRequest(f"The principalId '{principal}' is not valid: it is "
                         "a GUID (an object id, as `amlemu token --principal` prints in its token's oid claim).",
                         code="InvalidPrincipalId", target="properties.principalId")
    kind = props.get("principalType", "User")
    if kind not in PRINCIPAL_TYPES:
        raise ValidationFailed(f"The value '{kind}' is not valid for principalType: one of "
                               f"{', '.join(PRINCIPAL_TYPES)}.", target="properties.principalType")
    return Assignment(role, principal.lower(), kind)


def role_definition(subscription: str, role: RoleDefinition) -> dict:
    return {"id": definition_id(subscription, role), "type": f"{AUTHORIZATION}/roleDefinitions", "name": role.id,
            "properties": {"roleName": role.name, "type": "BuiltInRole", "description": role.description,
                           "assignableScopes": ["/"],
                           "permissions": [{"actions": list(role.actions), "notActions": list(role.not_actions),
                                            "dataActions": [], "notDataActions": []}]}}
