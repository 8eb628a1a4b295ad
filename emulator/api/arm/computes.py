"""ARM shapes of computes and of a cluster's nodes: what the SDK reads back."""

from emulator.api.arm.envelope import iso, system_data, workspace_id
from emulator.domain.compute import cluster
from emulator.domain.ids import PROVIDER
from emulator.services import attached, instances
from emulator.services.rows import Compute, Node, Workspace


def _cluster_status(row: Compute, nodes: list[Node]) -> dict:
    states = [cluster.NodeState(n.state) for n in nodes]
    return {"allocationState": row.allocation_state,
            "allocationStateTransitionTime": iso(row.allocation_changed_at),
            "currentNodeCount": cluster.current_count(states),
            "targetNodeCount": row.target_nodes,
            "nodeStateCounts": cluster.node_state_counts(states),
            "errors": row.errors}


def compute(row: Compute, nodes: list[Node], workspace_row: Workspace | None, runs_on: str | None = None) -> dict:
    """`runs_on`: an attached compute's, where its work runs (said in its description)."""
    body = row.body
    outer = body["properties"]
    inner = {"isolatedNetwork": False, "remoteLoginPortPublicAccess": "NotSpecified", "enableNodePublicIp": True,
             "subnet": None, "userAccountCredentials": None, "virtualMachineImage": None,
             **outer.get("properties", {})}
    description = outer.get("description")
    if runs_on is not None or row.compute_type == "VirtualMachine":  # attached: its own properties, as kept
        inner = dict(outer.get("properties", {}))
    if runs_on is not None:
        description = f"{description}\n{runs_on}" if description else runs_on
    if row.compute_type == "AmlCompute":
        inner.update(_cluster_status(row, nodes))
    elif row.compute_type == "ComputeInstance":
        inner.update(instances.arm_status(row))
    parent = workspace_id(workspace_row) if workspace_row else row.key.rsplit("/computes/", 1)[0]
    arm_id = f"{parent}/computes/{row.name}"
    return {"id": arm_id, "name": row.name, "type": f"{PROVIDER}/workspaces/computes", "location": row.location,
            "tags": body.get("tags", {}), "identity": body.get("identity"),
            "systemData": system_data(row.created_at, row.modified_at),
            "properties": {"computeType": row.compute_type, "computeLocation": row.location,
                           "provisioningState": row.provisioning_state, "description": description,
                           "createdOn": iso(row.created_at), "modifiedOn": iso(row.modified_at),
                           "resourceId": outer.get("resourceId"), "provisioningErrors": row.provisioning_errors,
                           "isAttachedCompute": runs_on is not None, "disableLocalAuth": outer.get("disableLocalAuth", True),
                           "properties": inner,
                           **(attached.arm_properties(row) if row.compute_type == "VirtualMachine" else {})}}


def node(row: Node) -> dict:
    return {"nodeId": row.node_id, "privateIpAddress": row.private_ip, "publicIpAddress": "127.0.0.1",
            "port": 50000, "nodeState": row.state, "runId": row.run_id}
