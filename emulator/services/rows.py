"""The stored rows the services hand the api: the store's tables, named here so that the api, which shapes them,
never imports the store."""

from emulator.store.tables import (
    AssetVersion,
    BatchDeployment,
    BatchEndpoint,
    Compute,
    Event,
    Job,
    Node,
    OnlineDeployment,
    OnlineEndpoint,
    Operation,
    Registry,
    RoleAssignment,
    Schedule,
    Workspace,
)

__all__ = ["AssetVersion", "BatchDeployment", "BatchEndpoint", "Compute", "Event", "Job", "Node", "OnlineDeployment",
           "OnlineEndpoint", "Operation", "Registry", "RoleAssignment",
           "Schedule", "Workspace"]
