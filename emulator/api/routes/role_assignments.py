"""Azure RBAC at a workspace's scope: role assignments (create, read, list, delete) and the built-in role
definitions they name. Who may call them is checked like any management call (deps.authorized)."""

from typing import Annotated, Any

from fastapi import APIRouter, Body, Depends, Response
from fastapi.responses import JSONResponse

from emulator.api.arm import role_assignments as arm
from emulator.api.deps import WS_PATH, Ctx, Ws, authorized
from emulator.domain import role_assignments as rules
from emulator.domain.roles import ROLES
from emulator.errors import NotFound

router = APIRouter()
Caller = Annotated[dict, Depends(authorized)]
AUTHZ = f"{WS_PATH}/providers/Microsoft.Authorization"
ASSIGNMENT = f"{AUTHZ}/roleAssignments/{{name}}"


@router.put(ASSIGNMENT, status_code=201)
def put_role_assignment(ctx: Ctx, ws: Ws, name: str, body: Annotated[dict[str, Any], Body()],
                        caller: Caller) -> dict:
    row, _ = ctx.services.role_assignments.put(ws, name, body, str(caller.get("oid", "")))
    return arm.role_assignment(row)


@router.get(ASSIGNMENT, dependencies=[Depends(authorized)])
def get_role_assignment(ctx: Ctx, ws: Ws, name: str) -> dict:
    row = ctx.services.role_assignments.get(ws, name)
    if row is None:
        raise NotFound(f"The role assignment '{name}' is not found.", code="RoleAssignmentNotFound", target="name")
    return arm.role_assignment(row)


@router.get(f"{AUTHZ}/roleAssignments", dependencies=[Depends(authorized)])
def list_role_assignments(ctx: Ctx, ws: Ws) -> dict:
    return {"value": [arm.role_assignment(row) for row in ctx.services.role_assignments.listed(ws)]}


@router.delete(ASSIGNMENT, dependencies=[Depends(authorized)])
def delete_role_assignment(ctx: Ctx, ws: Ws, name: str) -> Response:
    """200 and the assignment as it was; 204 when there was none, as Azure answers."""
    row = ctx.services.role_assignments.delete(ws, name)
    return Response(status_code=204) if row is None else JSONResponse(arm.role_assignment(row))


@router.get(f"{AUTHZ}/roleDefinitions", dependencies=[Depends(authorized)])
def list_role_definitions(ws: Ws) -> dict:
    return {"value": [rules.role_definition(ws.subscription, role) for role in ROLES]}


@router.get(f"{AUTHZ}/roleDefinitions/{{role_id}}", dependencies=[Depends(authorized)])
def get_role_definition(ws: Ws, role_id: str) -> dict:
    role = next((r for r in ROLES if r.id == role_id.lower()), None)
    if role is None:
        raise NotFound(f"The role definition '{role_id}' could not be found.", code="RoleDefinitionDoesNotExist",
                       target="roleDefinitionId")
    return rules.role_definition(ws.subscription, role)
