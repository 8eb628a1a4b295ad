"""Runs in a fresh interpreter with the `amlemu env` variables: the workspace extras through the SDK (the managed
network read back and written at create and update, keys, key resync, diagnosis); prints JSON of what it saw.

Usage: python workspace_probe.py
"""

import json
import os

from azure.ai.ml import MLClient
from azure.ai.ml.constants._workspace import IsolationMode
from azure.ai.ml.entities import FqdnDestination, ManagedNetwork, ServiceTagDestination, Workspace
from azure.core.exceptions import HttpResponseError
from azure.identity import DefaultAzureCredential


def _network(ml: MLClient, name: str) -> list:
    network = ml.workspaces.get(name).managed_network
    rules = sorted((r.name, r.type, r.category, r.status) for r in network.outbound_rules or [])
    return [network.isolation_mode, rules, dict(network.status or {})]


def main() -> dict:
    ml = MLClient(DefaultAzureCredential(), os.environ["AMLEMU_SUBSCRIPTION_ID"], os.environ["AMLEMU_RESOURCE_GROUP"],
                  os.environ["AMLEMU_WORKSPACE"])
    default = os.environ["AMLEMU_WORKSPACE"]
    seen = {"default": _network(ml, default),
            "listed": sorted((w.name, w.managed_network.isolation_mode) for w in ml.workspaces.list())}
    ml.workspaces.begin_create(Workspace(name="fenced", managed_network=ManagedNetwork(
        isolation_mode=IsolationMode.ALLOW_ONLY_APPROVED_OUTBOUND,
        outbound_rules=[FqdnDestination(name="pypi", destination="pypi.org"),
                        ServiceTagDestination(name="storage", service_tag="Storage", protocol="TCP",
                                              port_ranges="443")]))).result()
    seen["created"] = _network(ml, "fenced")
    fenced = ml.workspaces.get("fenced")
    fenced.managed_network = ManagedNetwork(isolation_mode=IsolationMode.ALLOW_INTERNET_OUTBOUND, outbound_rules=[
        ServiceTagDestination(name="keys", service_tag="AzureKeyVault", protocol="TCP", port_ranges="443")])
    ml.workspaces.begin_update(fenced).result()
    seen["updated"] = _network(ml, "fenced")
    fenced.managed_network = ManagedNetwork(isolation_mode=IsolationMode.ALLOW_INTERNET_OUTBOUND,
                                            outbound_rules=[FqdnDestination(name="x", destination="example.com")])
    try:
        ml.workspaces.begin_update(fenced).result()
        seen["bad_update"] = None
    except HttpResponseError as exc:
        seen["bad_update"] = exc.error.target if exc.error else str(exc)
    seen["after_bad_update"] = _network(ml, "fenced")
    keys = ml.workspaces.get_keys(default)
    seen["keys"] = [keys.user_storage_resource_id, keys.user_storage_key]
    seen["storage_account"] = ml.workspaces.get(default).storage_account
    seen["resync"] = ml.workspaces.begin_sync_keys(default).result()
    diagnosis = ml.workspaces.begin_diagnose(default).result()
    seen["diagnosis"] = {kind: [(r["code"], r["level"]) for r in getattr(diagnosis, kind) or []]
                         for kind in ("storage_account_results", "key_vault_results", "other_results")}
    return seen


if __name__ == "__main__":
    print(json.dumps(main()))
