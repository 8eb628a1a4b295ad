"""ARM shapes of online endpoints and deployments: what the SDK reads back."""

from emulator.api.arm.envelope import system_data, workspace_id
from emulator.domain.ids import PROVIDER
from emulator.services.rows import OnlineDeployment, OnlineEndpoint, Workspace
from emulator.settings import Settings

PRINCIPAL_ID = "00000000-0000-0000-0000-0000000000a2"
TENANT_ID = "72f988bf-0000-0000-0000-00000000a4e1"


def scoring_uri(settings: Settings, name: str) -> str:
    return f"{settings.scoring_url}/endpoints/{name}/score"


def endpoint_id(row: OnlineEndpoint, workspace: Workspace) -> str:
    return f"{workspace_id(workspace)}/onlineEndpoints/{row.name}"


def endpoint(row: OnlineEndpoint, workspace: Workspace, settings: Settings) -> dict:
    body = row.body
    return {"id": endpoint_id(row, workspace), "name": row.name, "type": f"{PROVIDER}/workspaces/onlineEndpoints",
            "location": row.location, "kind": "Managed", "tags": body.get("tags", {}),
            "identity": {**body.get("identity", {}), "principalId": PRINCIPAL_ID, "tenantId": TENANT_ID},
            "systemData": system_data(row.created_at, row.modified_at),
            "properties": {**body["properties"], "provisioningState": row.provisioning_state,
                           "scoringUri": scoring_uri(settings, row.name),
                           "swaggerUri": f"{settings.scoring_url}/endpoints/{row.name}/swagger.json"}}


def deployment(row: OnlineDeployment, parent: OnlineEndpoint, workspace: Workspace) -> dict:
    body = row.body
    properties = {**body["properties"], "provisioningState": row.provisioning_state}
    if row.error:
        properties["provisioningErrors"] = row.error  # beyond the swagger: the SDK ignores it, people read it
    return {"id": f"{endpoint_id(parent, workspace)}/deployments/{row.name}", "name": row.name,
            "type": f"{PROVIDER}/workspaces/onlineEndpoints/deployments", "location": body.get("location"),
            "kind": "Managed", "tags": body.get("tags", {}), "sku": body["sku"],
            "systemData": system_data(row.created_at, row.modified_at), "properties": properties}
