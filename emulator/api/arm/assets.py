"""ARM shapes of code, environment, model and data assets: versions and their containers."""

from emulator.api.arm.envelope import system_data, workspace_id
from emulator.domain.assets import versioned
from emulator.domain.ids import PROVIDER
from emulator.services.rows import AssetVersion, Workspace


def version(row: AssetVersion, workspace: Workspace) -> dict:
    props = {k: v for k, v in row.body.items() if v is not None}
    props["provisioningState"] = "Succeeded"
    if row.kind == "environments":
        props["environmentType"] = "UserCreated"
    if row.kind == "models":  # SDK 1.35 reads flavors.items() unguarded
        props = {"flavors": {}, "stage": versioned.DEFAULT_STAGE, **props}
    return {"id": f"{workspace_id(workspace)}/{row.kind}/{row.name}/versions/{row.version}", "name": row.version,
            "type": f"{PROVIDER}/workspaces/{row.kind}/versions",
            "systemData": system_data(row.created_at, row.modified_at), "properties": props}


def container(rows: list[AssetVersion], workspace: Workspace) -> dict:
    """rows: the versions of one asset, oldest first."""
    first, latest = rows[0], max(rows, key=lambda r: (r.created_at, r.key))
    # data.list() reads each container's dataType: the latest version's
    typed = {"dataType": latest.body.get("dataType")} if first.kind == "data" else {}
    return {"id": f"{workspace_id(workspace)}/{first.kind}/{first.name}", "name": first.name,
            "type": f"{PROVIDER}/workspaces/{first.kind}",
            "systemData": system_data(first.created_at, latest.modified_at),
            "properties": {"latestVersion": latest.version,
                           "nextVersion": versioned.next_version([r.version for r in rows]),
                           "isArchived": versioned.all_archived([r.body for r in rows]),
                           "description": None, "tags": {}, "properties": {},
                           "provisioningState": "Succeeded", **typed}}
