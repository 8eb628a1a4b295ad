"""Role assignments at a workspace's scope, as the api calls them; and what a principal has been granted."""

from emulator.domain import role_assignments as rules
from emulator.domain.ids import WorkspaceRef
from emulator.domain.roles import ROLES
from emulator.errors import Conflict
from emulator.services.facade.base import Service
from emulator.store.tables import RoleAssignment


class RoleAssignments(Service):
    def put(self, ref: WorkspaceRef, name: str, body: object, caller_oid: str) -> tuple[RoleAssignment, bool]:
        """Created, or the same one again (201 either way in Azure); a different role or principal under the
        same name is refused: Azure never updates an assignment."""
        name = rules.check_name(name)
        wanted = rules.parse(body)
        key = rules.assignment_id(ref.arm_id, name).lower()
        with self.in_workspace(ref) as (repo, workspace):
            row = repo.role_assignment(key)
            if row is not None:
                if (row.role_id, row.principal_id) != (wanted.role.id, wanted.principal_id):
                    raise Conflict("Tenant ID, application ID, principal ID, and scope are not allowed to be "
                                   "updated.", code="RoleAssignmentUpdateNotPermitted", target="name")
                return row, False
            same = [r for r in repo.role_assignments(workspace.key)
                    if (r.role_id, r.principal_id) == (wanted.role.id, wanted.principal_id)]
            if same:
                raise Conflict("The role assignment already exists.", code="RoleAssignmentExists",
                               target="properties.principalId")
            row = RoleAssignment(key=key, workspace_key=workspace.key, name=name, principal_id=wanted.principal_id,
                                 principal_type=wanted.principal_type, role_id=wanted.role.id,
                                 created_at=self.clock(), created_by=caller_oid)
            repo.add(row)
            return row, True

    def get(self, ref: WorkspaceRef, name: str) -> RoleAssignment | None:
        with self.in_workspace(ref) as (repo, _):
            return repo.role_assignment(rules.assignment_id(ref.arm_id, name))

    def listed(self, ref: WorkspaceRef) -> list[RoleAssignment]:
        with self.in_workspace(ref) as (repo, workspace):
            return repo.role_assignments(workspace.key)

    def delete(self, ref: WorkspaceRef, name: str) -> RoleAssignment | None:
        """The assignment as it was, or None when there was none (Azure answers 204)."""
        with self.in_workspace(ref) as (repo, _):
            row = repo.role_assignment(rules.assignment_id(ref.arm_id, name))
            if row is not None:
                repo.remove(row)
            return row

    def grants(self, principal_id: str) -> list[tuple[str, str]]:
        """(role name, scope) for each assignment the principal holds."""
        names = {r.id: r.name for r in ROLES}
        with self.store.reading() as repo:  # asked on each request a role's token makes: no write lock
            return [(names[r.role_id], WorkspaceRef.from_key(r.workspace_key).arm_id)
                    for r in repo.role_assignments_of(principal_id.lower()) if r.role_id in names]
