"""ARM documents of role assignments (Microsoft.Authorization/roleAssignments)."""

from emulator.api.arm.envelope import iso
from emulator.domain import role_assignments as rules
from emulator.domain.ids import WorkspaceRef
from emulator.domain.roles import ROLES
from emulator.services.rows import RoleAssignment


def role_assignment(row: RoleAssignment) -> dict:
    ref = WorkspaceRef.from_key(row.workspace_key)
    role = next(r for r in ROLES if r.id == row.role_id)
    scope = ref.arm_id
    return {"id": rules.assignment_id(scope, row.name), "type": f"{rules.AUTHORIZATION}/roleAssignments",
            "name": row.name,
            "properties": {"roleDefinitionId": rules.definition_id(ref.subscription, role),
                           "principalId": row.principal_id, "principalType": row.principal_type, "scope": scope,
                           "condition": None, "conditionVersion": None, "description": None,
                           "createdOn": iso(row.created_at), "updatedOn": iso(row.created_at),
                           "createdBy": row.created_by, "updatedBy": row.created_by,
                           "delegatedManagedIdentityResourceId": None}}
