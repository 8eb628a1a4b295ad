"""Azure RBAC: the ARM operation each request performs, and which built-in role allows it where."""

from pathlib import Path

import pytest

from emulator.domain import roles
from emulator.domain.roles import MLS, Operation

WS = "/subscriptions/s/resourceGroups/rg/providers/Microsoft.MachineLearningServices/workspaces/w"
OTHER_WS = WS[:-1] + "w2"
README = Path(__file__).resolve().parents[3] / "README.md"


@pytest.mark.parametrize("method, path, action, scope", [
    ("GET", f"{WS}/computes/c", f"{MLS}/workspaces/computes/read", f"{WS}/computes/c"),
    ("GET", f"{WS}/computes", f"{MLS}/workspaces/computes/read", WS),
    ("PUT", f"{WS}/computes/c", f"{MLS}/workspaces/computes/write", f"{WS}/computes/c"),
    ("PATCH", f"{WS}/computes/c", f"{MLS}/workspaces/computes/write", f"{WS}/computes/c"),
    ("DELETE", f"{WS}/computes/c", f"{MLS}/workspaces/computes/delete", f"{WS}/computes/c"),
    ("POST", f"{WS}/computes/c/start", f"{MLS}/workspaces/computes/start/action", f"{WS}/computes/c"),
    ("POST", f"{WS}/computes/c/listNodes", f"{MLS}/workspaces/computes/listNodes/action", f"{WS}/computes/c"),
    ("PUT", f"{WS}/jobs/j", f"{MLS}/workspaces/jobs/write", f"{WS}/jobs/j"),
    ("POST", f"{WS}/jobs/j/cancel", f"{MLS}/workspaces/jobs/cancel/action", f"{WS}/jobs/j"),
    ("PUT", f"{WS}/onlineEndpoints/e/deployments/d", f"{MLS}/workspaces/onlineEndpoints/deployments/write",
     f"{WS}/onlineEndpoints/e/deployments/d"),
    ("GET", WS, f"{MLS}/workspaces/read", WS),
    ("POST", f"{WS}/listKeys", f"{MLS}/workspaces/listKeys/action", WS),
    ("PUT", f"{WS}/providers/Microsoft.Authorization/roleAssignments/g",
     "Microsoft.Authorization/roleAssignments/write", f"{WS}/providers/Microsoft.Authorization/roleAssignments/g"),
    ("GET", "/subscriptions/s/providers/Microsoft.MachineLearningServices/locations/eastus/usages",
     f"{MLS}/locations/usages/read", "/subscriptions/s/providers/Microsoft.MachineLearningServices/locations/eastus"),
    ("GET", "/subscriptions/s/resourceGroups/rg", "Microsoft.Resources/subscriptions/resourceGroups/read",
     "/subscriptions/s/resourceGroups/rg"),
])
def test_each_request_is_one_arm_operation(method, path, action, scope):
    assert roles.operation(method, path) == Operation(action, scope)


@pytest.mark.parametrize("path", ["/msi/token", "/_emulator/health", "/_emulator/ready", "/history/v1.0/subscriptions/s", "/"])
def test_paths_outside_arm_are_no_operation(path):
    assert roles.operation("GET", path) is None


ALLOWED = {  # role → (action, allowed?)
    "Owner": [(f"{MLS}/workspaces/computes/write", True), ("Microsoft.Authorization/roleAssignments/write", True)],
    "Contributor": [(f"{MLS}/workspaces/computes/delete", True), (f"{MLS}/workspaces/write", True),
                    ("Microsoft.Authorization/roleAssignments/write", False),
                    ("Microsoft.Authorization/roleAssignments/read", True)],
    "Reader": [(f"{MLS}/workspaces/computes/read", True), (f"{MLS}/workspaces/read", True),
               (f"{MLS}/workspaces/computes/write", False), (f"{MLS}/workspaces/computes/start/action", False),
               (f"{MLS}/workspaces/jobs/write", False), ("Microsoft.Authorization/roleAssignments/write", False)],
    "AzureML Data Scientist": [
        (f"{MLS}/workspaces/jobs/write", True), (f"{MLS}/workspaces/jobs/cancel/action", True),
        (f"{MLS}/workspaces/computes/read", True), (f"{MLS}/workspaces/read", True),
        (f"{MLS}/workspaces/computes/start/action", True),
        (f"{MLS}/workspaces/computes/write", False), (f"{MLS}/workspaces/computes/delete", False),
        (f"{MLS}/workspaces/computes/listKeys/action", False), (f"{MLS}/workspaces/write", False),
        (f"{MLS}/workspaces/delete", False), (f"{MLS}/locations/usages/read", False)],
    "AzureML Compute Operator": [
        (f"{MLS}/workspaces/computes/write", True), (f"{MLS}/workspaces/computes/stop/action", True),
        (f"{MLS}/workspaces/computes/start/action", True), (f"{MLS}/workspaces/computes/delete", True),
        (f"{MLS}/workspaces/jobs/write", False), (f"{MLS}/workspaces/read", False)],
}


@pytest.mark.parametrize("role, action, allowed",
                         [(role, action, allowed) for role, cases in ALLOWED.items() for action, allowed in cases])
def test_built_in_roles_allow_what_azure_allows(role, action, allowed):
    assert roles.allows(roles.role_named(role), action) is allowed


def test_actions_match_case_insensitively():
    assert roles.allows(roles.role_named("Reader"), "microsoft.machinelearningservices/WORKSPACES/computes/READ")


@pytest.mark.parametrize("granted, scope, covered", [
    ("/", f"{WS}/computes/c", True),
    (WS, f"{WS}/computes/c", True),
    (WS, WS, True),
    (WS.upper(), f"{WS}/jobs/j", True),
    (WS, f"{OTHER_WS}/computes/c", False),
    (WS, f"{WS}2/computes/c", False),  # a workspace whose name begins like the granted one's
])
def test_a_role_granted_at_a_scope_covers_what_is_under_it(granted, scope, covered):
    assert roles.scope_covers(granted, scope) is covered


def test_permits_joins_role_and_scope():
    op = roles.operation("PUT", f"{OTHER_WS}/jobs/j")
    assert roles.permits("AzureML Data Scientist", "/", op)
    assert not roles.permits("AzureML Data Scientist", WS, op)
    assert not roles.permits("No Such Role", "/", op)


def test_role_names_resolve_case_insensitively_and_ids_are_azures():
    assert roles.role_named("reader").id == "acdd72a7-3385-48ef-bd42-f606fba81ae7"
    assert roles.role_named("azureml data scientist").id == "f6c7c914-8db3-469d-8ca1-694a8f32e121"
    assert roles.role_named("Readers") is None


def test_the_message_is_azures_authorization_failed():
    op = Operation(f"{MLS}/workspaces/computes/write", f"{WS}/computes/c")
    assert roles.authorization_failed_message("bob@amlemu.local", "oid-1", op) == (
        "The client 'bob@amlemu.local' with object id 'oid-1' does not have authorization to perform action "
        f"'{MLS}/workspaces/computes/write' over scope '{WS}/computes/c' or the scope is invalid. If access was "
        "recently granted, please refresh your credentials.")


def test_readme_table_is_the_generated_one():
    assert roles.markdown_table() in README.read_text(), "regenerate with `amlemu roles --markdown`"


def test_a_data_plane_request_acts_on_its_workspaces_experiment_runs():
    ws = "/subscriptions/s/resourceGroups/rg/providers/Microsoft.MachineLearningServices/workspaces/w"
    read = roles.data_plane_operation("GET", f"/mlflow/v2.0{ws}/api/2.0/mlflow/runs/get")
    write = roles.data_plane_operation("POST", f"/history/v1.0{ws}/experiments/e/runs/r/artifacts/batch/metadata")
    assert read == Operation(f"{MLS}/workspaces/experiments/runs/read", ws)
    assert write == Operation(f"{MLS}/workspaces/experiments/runs/write", ws)
    assert roles.data_plane_operation("GET", "/discovery") is None
    for reading_post in (f"/mlflow/v2.0{ws}/api/2.0/mlflow/runs/search", f"/mlflow/v2.0{ws}/api/2.0/mlflow/experiments/search",
                         f"/history/v1.0{ws}/rundata", f"/data/v1.0{ws}/dataversion/batchGetResolvedUris"):
        assert roles.data_plane_operation("POST", reading_post) == read, reading_post  # a Reader's searches
    assert roles.data_plane_operation("POST", f"/mlflow/v2.0{ws}/api/2.0/mlflow/runs/log-batch") == write
    assert roles.permits("Reader", ws, read) and not roles.permits("Reader", ws, write)
    assert roles.permits("AzureML Data Scientist", ws, write)
    assert not roles.permits("Owner", ws + "-other", read)
    assert not roles.permits("AzureML Compute Operator", ws, read)
