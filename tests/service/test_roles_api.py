"""Azure RBAC through the api: tokens minted for a role (`amlemu token`) may do what Azure's built-in role allows,
a refused call is Azure's 403 AuthorizationFailed naming action and scope and changes nothing; role assignments
at a workspace's scope grant more; the emulated identity stays Owner everywhere."""

import uuid

import pytest

from emulator import tokens
from emulator.domain.roles import MLS
from tests.service.conftest import RESOURCE
from tests.service.test_api import API, COMPUTES, RG_PATH, SUB, WS_PATH, assert_arm_error, cluster, put_cluster
from tests.service.test_instances import act, put_ci, settle
from tests.service.test_jobs import JOBS, job_body, put_job, ready  # noqa: F401 (a fixture)

AUTHZ = f"{WS_PATH}/providers/Microsoft.Authorization"
OTHER_WS = f"{RG_PATH}/workspaces/other"


def bearer(secret: bytes, role: str, scope: str = "/", principal: str = "alice") -> dict[str, str]:
    token, _ = tokens.issue_for_role(secret, RESOURCE, principal, role, scope)
    return {"Authorization": f"Bearer {token}"}


def refused(response, action: str, scope: str, principal: str = "alice") -> None:
    error = assert_arm_error(response, 403, "AuthorizationFailed")
    oid = tokens.principal_object_id(principal)
    assert error["message"] == (
        f"The client '{principal}@amlemu.local' with object id '{oid}' does not have authorization to perform "
        f"action '{action}' over scope '{scope}' or the scope is invalid. If access was recently granted, please "
        "refresh your credentials.")


def test_a_reader_reads_a_cluster_but_cannot_change_or_delete_it(client, auth, secret):
    put_cluster(client, auth, "cpu", cluster(max_nodes=2))
    before = client.get(f"{COMPUTES}/cpu", params=API, headers=auth).json()
    reader = bearer(secret, "Reader")
    assert client.get(f"{COMPUTES}/cpu", params=API, headers=reader).json() == before
    assert [c["name"] for c in client.get(COMPUTES, params=API, headers=reader).json()["value"]] == ["cpu"]
    refused(client.put(f"{COMPUTES}/cpu", params=API, headers=reader, json=cluster(max_nodes=5)),
            f"{MLS}/workspaces/computes/write", f"{COMPUTES}/cpu")
    refused(client.delete(f"{COMPUTES}/cpu", params=API, headers=reader),
            f"{MLS}/workspaces/computes/delete", f"{COMPUTES}/cpu")
    refused(client.put(f"{COMPUTES}/new", params=API, headers=reader, json=cluster()),
            f"{MLS}/workspaces/computes/write", f"{COMPUTES}/new")
    after = client.get(f"{COMPUTES}/cpu", params=API, headers=auth).json()
    assert after == before and [c["name"] for c in client.get(COMPUTES, params=API, headers=auth).json()["value"]] \
        == ["cpu"]


def test_a_data_scientist_submits_jobs_but_cannot_create_clusters(client, auth, secret, ready):  # noqa: F811
    scientist = bearer(secret, "AzureML Data Scientist")
    job = put_job(client, scientist, "by-scientist", job_body())
    assert job["properties"]["status"] in ("NotStarted", "Queued", "Starting")
    assert client.post(f"{JOBS}/by-scientist/cancel", params=API, headers=scientist).status_code in (200, 202)
    refused(client.put(f"{COMPUTES}/gpu", params=API, headers=scientist, json=cluster()),
            f"{MLS}/workspaces/computes/write", f"{COMPUTES}/gpu")
    refused(client.delete(f"{COMPUTES}/cpu", params=API, headers=scientist),
            f"{MLS}/workspaces/computes/delete", f"{COMPUTES}/cpu")
    refused(client.patch(WS_PATH, params=API, headers=scientist, json={"tags": {"a": "b"}}),
            f"{MLS}/workspaces/write", WS_PATH)
    assert client.get(f"{COMPUTES}/gpu", params=API, headers=auth).status_code == 404


def test_a_compute_operator_starts_and_stops_an_instance_but_submits_no_job(client, app, auth, secret, ready):  # noqa: F811
    put_ci(client, auth)
    settle(app)
    operator = bearer(secret, "AzureML Compute Operator")
    assert act(client, operator, "stop").status_code == 202
    settle(app)
    assert act(client, operator, "start").status_code == 202
    refused(client.put(f"{JOBS}/by-operator", params=API, headers=operator, json=job_body()),
            f"{MLS}/workspaces/jobs/write", f"{JOBS}/by-operator")


def test_a_token_for_one_workspace_carries_no_rights_in_another(client, auth, secret):
    assert client.put(OTHER_WS, params=API, headers=auth, json={"location": "local"}).status_code in (200, 201)
    owner_here = bearer(secret, "Owner", WS_PATH)
    assert client.get(COMPUTES, params=API, headers=owner_here).status_code == 200
    put_cluster(client, owner_here, "mine")
    refused(client.get(f"{OTHER_WS}/computes", params=API, headers=owner_here),
            f"{MLS}/workspaces/computes/read", OTHER_WS)
    refused(client.put(f"{OTHER_WS}/computes/theirs", params=API, headers=owner_here, json=cluster()),
            f"{MLS}/workspaces/computes/write", f"{OTHER_WS}/computes/theirs")
    assert client.get(f"{OTHER_WS}/computes/theirs", params=API, headers=auth).status_code == 404


def test_a_token_for_one_workspace_lists_only_that_workspace_as_arm_filters_a_list(client, auth, secret):
    assert client.put(OTHER_WS, params=API, headers=auth, json={"location": "local"}).status_code in (200, 201)
    everyone = {w["name"] for w in client.get(f"{RG_PATH}/workspaces", params=API, headers=auth).json()["value"]}
    assert {"other", WS_PATH.rsplit("/", 1)[-1]} <= everyone
    for role in ("Reader", "AzureML Data Scientist"):
        scoped = bearer(secret, role, WS_PATH)
        for listing in (f"{RG_PATH}/workspaces", f"/subscriptions/{SUB}/providers/Microsoft.MachineLearningServices/workspaces"):
            answer = client.get(listing, params=API, headers=scoped)
            assert answer.status_code == 200, answer.text
            assert [w["id"].lower() for w in answer.json()["value"]] == [WS_PATH.lower()]
    reader = bearer(secret, "Reader")  # at the root: every workspace
    assert {w["name"] for w in client.get(f"{RG_PATH}/workspaces", params=API, headers=reader).json()["value"]} \
        == everyone
    refused(client.get(f"{RG_PATH}/registries", params=API, headers=bearer(secret, "Reader", WS_PATH)),
            f"{MLS}/registries/read", RG_PATH)  # no other list above the grant is let through


def assignment(role_id: str, principal: str, principal_type: str = "User") -> dict:
    return {"properties": {"roleDefinitionId": f"/subscriptions/{SUB}/providers/Microsoft.Authorization/"
                                               f"roleDefinitions/{role_id}",
                           "principalId": principal, "principalType": principal_type}}


CONTRIBUTOR = "b24988ac-6180-42a0-ab88-20f7382dd24c"


def test_role_assignments_are_created_read_listed_deleted_and_grant_their_role(client, auth, secret):
    bob = tokens.principal_object_id("bob")
    name = str(uuid.uuid4())
    reader_bob = bearer(secret, "Reader", WS_PATH, principal="bob")
    refused(client.put(f"{COMPUTES}/bobs", params=API, headers=reader_bob, json=cluster()),
            f"{MLS}/workspaces/computes/write", f"{COMPUTES}/bobs", principal="bob")

    created = client.put(f"{AUTHZ}/roleAssignments/{name}", params=API, headers=auth,
                         json=assignment(CONTRIBUTOR, bob))
    assert created.status_code == 201, created.text
    body = created.json()
    assert body["id"] == f"{AUTHZ}/roleAssignments/{name}" and body["name"] == name
    assert body["type"] == "Microsoft.Authorization/roleAssignments"
    assert body["properties"]["roleDefinitionId"].endswith(f"/roleDefinitions/{CONTRIBUTOR}")
    assert body["properties"]["principalId"] == bob and body["properties"]["scope"] == WS_PATH
    assert client.get(f"{AUTHZ}/roleAssignments/{name}", params=API, headers=auth).json() == body
    assert client.get(f"{AUTHZ}/roleAssignments", params=API, headers=reader_bob).json()["value"] == [body]

    put_cluster(client, reader_bob, "bobs")  # the assignment grants bob Contributor here

    assert client.delete(f"{AUTHZ}/roleAssignments/{name}", params=API, headers=auth).json() == body
    assert client.delete(f"{AUTHZ}/roleAssignments/{name}", params=API, headers=auth).status_code == 204
    assert_arm_error(client.get(f"{AUTHZ}/roleAssignments/{name}", params=API, headers=auth), 404,
                     "RoleAssignmentNotFound")
    refused(client.delete(f"{COMPUTES}/bobs", params=API, headers=reader_bob),
            f"{MLS}/workspaces/computes/delete", f"{COMPUTES}/bobs", principal="bob")


def test_a_contributor_cannot_assign_roles(client, secret):
    name = str(uuid.uuid4())
    response = client.put(f"{AUTHZ}/roleAssignments/{name}", params=API, headers=bearer(secret, "Contributor"),
                          json=assignment(CONTRIBUTOR, str(uuid.uuid4())))
    refused(response, "Microsoft.Authorization/roleAssignments/write", f"{AUTHZ}/roleAssignments/{name}")


def test_role_definitions_are_azures_built_in_ones(client, auth):
    listed = client.get(f"{AUTHZ}/roleDefinitions", params=API, headers=auth).json()["value"]
    names = {d["name"]: d["properties"]["roleName"] for d in listed}
    assert names == {"8e3af657-a8ff-443c-a75c-2fe8c4bcb635": "Owner",
                     "b24988ac-6180-42a0-ab88-20f7382dd24c": "Contributor",
                     "acdd72a7-3385-48ef-bd42-f606fba81ae7": "Reader",
                     "f6c7c914-8db3-469d-8ca1-694a8f32e121": "AzureML Data Scientist",
                     "e503ece1-11d0-4e8e-8e2c-7a6c3bf38815": "AzureML Compute Operator"}
    reader = client.get(f"{AUTHZ}/roleDefinitions/acdd72a7-3385-48ef-bd42-f606fba81ae7", params=API,
                        headers=auth).json()
    assert reader["properties"]["permissions"][0]["actions"] == ["*/read"]


@pytest.mark.parametrize("name, body, status, code, target", [
    ("not-a-guid", assignment(CONTRIBUTOR, str(uuid.uuid4())), 400, "InvalidRoleAssignmentId", "name"),
    (None, assignment("00000000-0000-0000-0000-000000000000", str(uuid.uuid4())), 400,
     "RoleDefinitionDoesNotExist", "properties.roleDefinitionId"),
    (None, assignment("Reader", str(uuid.uuid4())), 400, "RoleDefinitionDoesNotExist",
     "properties.roleDefinitionId"),
    (None, assignment(CONTRIBUTOR, "alice"), 400, "InvalidPrincipalId", "properties.principalId"),
    (None, assignment(CONTRIBUTOR, str(uuid.uuid4()), "Robot"), 400, "ValidationError",
     "properties.principalType"),
    (None, {"roleDefinitionId": CONTRIBUTOR}, 400, "ValidationError", "properties"),
])
def test_bad_role_assignments_name_the_field_and_change_nothing(client, auth, name, body, status, code, target):
    path = f"{AUTHZ}/roleAssignments/{name or uuid.uuid4()}"
    assert_arm_error(client.put(path, params=API, headers=auth, json=body), status, code, target)
    assert client.get(f"{AUTHZ}/roleAssignments", params=API, headers=auth).json()["value"] == []


def test_the_same_assignment_under_a_new_name_conflicts(client, auth):
    principal = str(uuid.uuid4())
    assert client.put(f"{AUTHZ}/roleAssignments/{uuid.uuid4()}", params=API, headers=auth,
                      json=assignment(CONTRIBUTOR, principal)).status_code == 201
    assert_arm_error(client.put(f"{AUTHZ}/roleAssignments/{uuid.uuid4()}", params=API, headers=auth,
                                json=assignment(CONTRIBUTOR, principal)), 409, "RoleAssignmentExists")
    assert len(client.get(f"{AUTHZ}/roleAssignments", params=API, headers=auth).json()["value"]) == 1


def test_a_token_for_an_unknown_role_allows_nothing(client, secret):
    refused(client.get(COMPUTES, params=API, headers=bearer(secret, "Superuser")),
            f"{MLS}/workspaces/computes/read", WS_PATH)


def test_a_reader_cannot_change_the_emulators_own_settings(client, auth, secret):
    before = client.get("/_emulator/quotas", headers=auth).json()
    reader = bearer(secret, "Reader")
    refused(client.put("/_emulator/quotas", headers=reader, json={"lowPriorityCores": 1000}),
            "Microsoft.MachineLearningServices/emulator/write", "/")
    assert client.get("/_emulator/quotas", headers=auth).json() == before
