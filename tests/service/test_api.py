"""The ARM REST surface of the control plane, driven in-process through TestClient."""

import re
import time
from datetime import UTC, datetime, timedelta

import isodate
import jwt
import pytest

from emulator import tokens
from emulator.domain.compute import vm_sizes
from emulator.domain.ids import WorkspaceRef
from emulator.domain.storage import blob_access
from emulator.store.tables import Node
from tests.service.conftest import RESOURCE

SUB = "00000000-0000-0000-0000-000000000000"
PROVIDER = "Microsoft.MachineLearningServices"
RG_PATH = f"/subscriptions/{SUB}/resourceGroups/amlemu/providers/{PROVIDER}"
WS_PATH = f"{RG_PATH}/workspaces/amlemu"
# The default workspace's storage account: a stem of its name and a hash of its ARM id.
ACCOUNT = blob_access.workspace_account(WorkspaceRef(SUB, "amlemu", "amlemu"))
COMPUTES = f"{WS_PATH}/computes"
LOCATION_PATH = f"/subscriptions/{SUB}/providers/{PROVIDER}/locations/local"
API = {"api-version": "2024-10-01"}
COUNT_KEYS = {"idleNodeCount", "runningNodeCount", "preparingNodeCount", "unusableNodeCount",
              "leavingNodeCount", "preemptedNodeCount"}
OP_URL = re.compile(rf"^https://localhost:8443/subscriptions/{SUB}/providers/{PROVIDER}/locations/local"
                    r"/computeOperationsStatus/(?P<id>[0-9a-f-]{36})\?api-version=[\w-]+$")


def cluster(vm_size: str = "Standard_DS3_v2", min_nodes: int = 0, max_nodes: int = 2, **inner) -> dict:
    return {"location": "local", "tags": {"team": "ml"},
            "properties": {"computeType": "AmlCompute", "description": "test cluster",
                           "properties": {"vmSize": vm_size, "vmPriority": "Dedicated",
                                          "scaleSettings": {"minNodeCount": min_nodes,
                                                            "maxNodeCount": max_nodes,
                                                            "nodeIdleTimeBeforeScaleDown": "PT120S"},
                                          **inner}}}


def assert_arm_error(response, status: int, code: str | None = None, target: str | None = None) -> dict:
    """The ARM error contract: {"error": {"code", "message", "target"?, "details"?}} and nothing else."""
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/json")
    body = response.json()
    assert set(body) == {"error"}, body
    error = body["error"]
    assert {"code", "message"} <= set(error) <= {"code", "message", "target", "details"}, error
    assert isinstance(error["code"], str) and error["code"]
    assert isinstance(error["message"], str) and error["message"]
    if code is not None:
        assert error["code"] == code, error
    if target is not None:
        assert error.get("target") == target, error
    return error


def list_computes(client, auth) -> list[dict]:
    response = client.get(COMPUTES, params=API, headers=auth)
    assert response.status_code == 200, response.text
    return response.json()["value"]


def list_workspaces(client, auth) -> list[dict]:
    response = client.get(f"/subscriptions/{SUB}/providers/{PROVIDER}/workspaces", params=API, headers=auth)
    assert response.status_code == 200, response.text
    return response.json()["value"]


def put_cluster(client, auth, name: str, body: dict | None = None, expected: int = 201):
    response = client.put(f"{COMPUTES}/{name}", params=API, json=body or cluster(), headers=auth)
    assert response.status_code == expected, response.text
    return response


def add_nodes(app, name: str, *states: str) -> None:
    """Write nodes as the controller would."""
    now = datetime(2025, 1, 1, tzinfo=UTC)
    key = f"{COMPUTES}/{name}".lower()
    with app.state.context.store.transaction() as repo:
        for i, state in enumerate(states):
            repo.add(Node(node_id=f"{name}-node-{i}", compute_key=key, state=state,
                          private_ip=f"10.0.0.{i + 4}",
                          created_at=now + timedelta(seconds=i), state_changed_at=now,
                          idle_since=now if state == "idle" else None))


# --------------------------------------------------------------------------------------------------------
# Bootstrap: cloud metadata and the managed identity
# --------------------------------------------------------------------------------------------------------

def test_cloud_metadata_shape(client):
    response = client.get("/metadata/endpoints", params={"api-version": "2019-05-01"})
    assert response.status_code == 200
    clouds = response.json()
    assert isinstance(clouds, list) and len(clouds) == 1
    cloud = clouds[0]
    assert cloud["name"] == "AzureMLEmulator"
    assert cloud["resourceManager"] == "https://localhost:8443/"
    assert cloud["authentication"]["audiences"] == ["https://localhost:8443/"]
    assert cloud["authentication"]["loginEndpoint"].startswith("https://")
    assert cloud["suffixes"]["storage"] == "localhost:8443"
    for key in ("portal", "graphAudience", "microsoftGraphResourceId", "sqlManagement",
                "activeDirectoryDataLake"):
        assert isinstance(cloud[key], str)


def test_health_needs_no_token(client):
    assert client.get("/_emulator/health").json() == {"status": "ok"}


def test_not_ready_without_the_mlflow_server_and_says_so(client):
    """None runs here: the api is alive, but not ready to serve tracking."""
    answer = client.get("/_emulator/ready")
    assert answer.status_code == 503
    error = answer.json()["error"]
    assert error["code"] == "ServiceUnavailable" and "MLflow tracking server" in error["message"], error


def test_msi_token_issues_a_token_the_api_accepts(client, identity_header, secret):
    before = int(time.time())
    response = client.get("/msi/token", params={"resource": "https://localhost:8443/"},
                          headers=identity_header)
    assert response.status_code == 200
    body = response.json()
    assert body["token_type"] == "Bearer"
    assert body["resource"] == "https://localhost:8443/"
    assert body["client_id"] == tokens.OBJECT_ID
    assert isinstance(body["expires_on"], str)
    expires_on = int(body["expires_on"])
    assert before + tokens.LIFETIME_SECONDS <= expires_on <= int(time.time()) + tokens.LIFETIME_SECONDS
    claims = tokens.verify(secret, f"Bearer {body['access_token']}", tokens.management_audiences([RESOURCE]))
    assert claims["aud"] == "https://localhost:8443"
    assert claims["tid"] == tokens.TENANT_ID and claims["oid"] == tokens.OBJECT_ID
    workspace = client.get(WS_PATH, params=API, headers={"Authorization": f"Bearer {body['access_token']}"})
    assert workspace.status_code == 200


@pytest.mark.parametrize("header", [
    pytest.param(None, id="missing"),
    pytest.param("", id="empty"),
    pytest.param("wrong", id="wrong"),
    pytest.param(tokens.identity_header(b"another secret entirely........"), id="another secret's header"),
])
def test_msi_token_refuses_a_missing_or_wrong_identity_header(client, header):
    headers = {} if header is None else {"X-IDENTITY-HEADER": header}
    response = client.get("/msi/token", params={"resource": "https://localhost:8443"}, headers=headers)
    error = assert_arm_error(response, 401, "AuthenticationFailed", "X-IDENTITY-HEADER")
    assert "X-IDENTITY-HEADER" in error["message"]
    assert "access_token" not in response.text


def test_msi_token_needs_a_resource(client, identity_header):
    assert_arm_error(client.get("/msi/token", headers=identity_header), 400, "BadRequest", "resource")


# --------------------------------------------------------------------------------------------------------
# Authentication of the management routes
# --------------------------------------------------------------------------------------------------------

MANAGEMENT_REQUESTS = [
    ("GET", WS_PATH),
    ("GET", f"{RG_PATH}/workspaces"),
    ("PUT", f"{RG_PATH}/workspaces/newws"),
    ("DELETE", WS_PATH),
    ("GET", COMPUTES),
    ("GET", f"{COMPUTES}/cpu"),
    ("PUT", f"{COMPUTES}/cpu"),
    ("PATCH", f"{COMPUTES}/cpu"),
    ("DELETE", f"{COMPUTES}/cpu"),
    ("POST", f"{COMPUTES}/cpu/listNodes"),
    ("GET", f"{LOCATION_PATH}/vmSizes"),
    ("GET", f"{LOCATION_PATH}/usages"),
    ("GET", f"{LOCATION_PATH}/computeOperationsStatus/00000000-0000-0000-0000-000000000001"),
    ("PATCH", WS_PATH),
    ("GET", f"/subscriptions/{SUB}/resourceGroups/amlemu"),
    ("PUT", f"/subscriptions/{SUB}/resourceGroups/amlemu/providers/Microsoft.Resources/deployments/dep"),
]


def _bad_authorization(kind: str, secret: bytes) -> str | None:
    good, _ = tokens.issue(secret, "https://localhost:8443")
    other_good, _ = tokens.issue(secret, "https://localhost:8443")  # another uti: another signature
    return {
        "none": None,
        "garbage": "garbage",
        "bearer garbage": "Bearer not.a.jwt",
        "bearer empty": "Bearer",
        "basic scheme": "Basic dXNlcjpwYXNz",
        "good token, wrong scheme": f"Token {good}",
        "other secret": "Bearer " + tokens.issue(b"x" * 32, "https://localhost:8443")[0],
        "expired": "Bearer " + tokens.issue(secret, "https://localhost:8443", now=time.time() - 2 * 86400)[0],
        "signature of another token": "Bearer " + good.rsplit(".", 1)[0] + "." + other_good.rsplit(".", 1)[1],
        "alg none": "Bearer " + jwt.encode({"aud": "https://localhost:8443", "tid": tokens.TENANT_ID}, None,
                                           algorithm="none"),
    }[kind]


BAD_TOKEN_KINDS = ["none", "garbage", "bearer garbage", "bearer empty", "basic scheme",
                   "good token, wrong scheme", "other secret", "expired", "signature of another token",
                   "alg none"]
# Every management route without a token or with another secret's token; every kind of bad token on a
# reading and a writing route.
BAD_TOKEN_CASES = (
    [pytest.param(m, p, kind, id=f"{m} {'/'.join(p.rsplit('/', 2)[-2:])} [{kind}]")
     for m, p in MANAGEMENT_REQUESTS for kind in ("none", "other secret")]
    + [pytest.param(m, p, kind, id=f"{m} {'/'.join(p.rsplit('/', 2)[-2:])} [{kind}]")
       for m, p in (("GET", COMPUTES), ("PUT", f"{COMPUTES}/cpu")) for kind in BAD_TOKEN_KINDS
       if kind not in ("none", "other secret")]
)


@pytest.mark.parametrize("method,path,kind", BAD_TOKEN_CASES)
def test_management_routes_refuse_bad_tokens(shared, method, path, kind):
    client, auth = shared.client, shared.auth
    before = (list_workspaces(client, auth), list_computes(client, auth))
    authorization = _bad_authorization(kind, shared.secret)
    headers = {} if authorization is None else {"Authorization": authorization}
    body = {"location": "local"} if path.endswith("/newws") else cluster()
    response = client.request(method, path, params=API, headers=headers,
                              json=body if method in ("PUT", "PATCH") else None)
    error = assert_arm_error(response, 401)
    assert error["code"] in ("AuthenticationFailed", "InvalidAuthenticationToken")
    assert "Azure-AsyncOperation" not in response.headers
    assert (list_workspaces(client, auth), list_computes(client, auth)) == before


# --------------------------------------------------------------------------------------------------------
# Workspaces
# --------------------------------------------------------------------------------------------------------

def test_default_workspace(client, auth):
    response = client.get(WS_PATH, params=API, headers=auth)
    assert response.status_code == 200
    ws = response.json()
    assert ws["id"] == WS_PATH
    assert ws["name"] == "amlemu"
    assert ws["type"] == f"{PROVIDER}/workspaces"
    assert ws["location"] == "local"
    assert ws["properties"]["provisioningState"] == "Succeeded"
    assert ws["properties"]["friendlyName"] == "amlemu"
    assert re.fullmatch(r"[0-9a-f-]{36}", ws["properties"]["workspaceId"])
    assert ws["properties"]["discoveryUrl"] == "https://localhost:8443/discovery"
    assert ws["identity"]["type"] == "SystemAssigned"
    assert set(ws["systemData"]) >= {"createdAt", "createdBy", "lastModifiedAt", "lastModifiedBy"}
    assert [w["id"] for w in list_workspaces(client, auth)] == [WS_PATH]


def test_workspace_put_get_list_delete(client, auth):
    path = f"{RG_PATH}/workspaces/team-ws_2"
    created = client.put(path, params=API, headers=auth, json={
        "location": "local", "tags": {"owner": "me"}, "identity": {"type": "SystemAssigned"},
        "properties": {"friendlyName": "Team WS", "description": "first", "notWritable": "dropped"}})
    assert created.status_code == 201, created.text
    ws = created.json()
    assert ws["id"] == path and ws["name"] == "team-ws_2" and ws["location"] == "local"
    assert ws["tags"] == {"owner": "me"}
    assert ws["properties"]["friendlyName"] == "Team WS" and ws["properties"]["description"] == "first"
    assert "notWritable" not in ws["properties"]

    fetched = client.get(path, params=API, headers=auth)
    assert fetched.status_code == 200 and fetched.json() == ws

    updated = client.put(path, params=API, headers=auth,
                         json={"location": "elsewhere", "properties": {"description": "second"}})
    assert updated.status_code == 200, updated.text
    assert updated.json()["properties"]["description"] == "second"
    assert updated.json()["location"] == "local", "a workspace keeps the location it was created in"
    assert updated.json()["properties"]["workspaceId"] == ws["properties"]["workspaceId"]

    in_group = client.get(f"{RG_PATH}/workspaces", params=API, headers=auth).json()
    assert {w["name"] for w in in_group["value"]} == {"amlemu", "team-ws_2"}
    assert in_group["nextLink"] is None
    assert {w["name"] for w in list_workspaces(client, auth)} == {"amlemu", "team-ws_2"}

    deleted = client.delete(path, params=API, headers=auth)
    assert deleted.status_code == 200
    assert_arm_error(client.get(path, params=API, headers=auth), 404, "ResourceNotFound", "workspaceName")
    assert client.delete(path, params=API, headers=auth).status_code == 204
    assert [w["name"] for w in list_workspaces(client, auth)] == ["amlemu"]


def test_workspace_patch_merges_tags_and_properties(client, auth):
    before = client.get(WS_PATH, params=API, headers=auth).json()
    response = client.patch(WS_PATH, params=API, headers=auth,
                            json={"tags": {"env": "dev"}, "properties": {"description": "patched"}})
    assert response.status_code == 200, response.text
    ws = response.json()
    assert ws["tags"] == {"env": "dev"}
    assert ws["properties"]["description"] == "patched"
    assert ws["properties"]["friendlyName"] == before["properties"]["friendlyName"]  # untouched keys stay
    assert ws["location"] == before["location"]
    assert client.get(WS_PATH, params=API, headers=auth).json() == ws


@pytest.mark.parametrize("body,target", [
    pytest.param({"properties": {"description": 5}}, "properties.description", id="description not a string"),
    pytest.param({"tags": {"a": 1}}, "tags", id="tag not a string"),
    pytest.param([{"tags": {}}], "body", id="body is a list"),
])
def test_bad_workspace_patches_change_nothing(client, auth, body, target):
    before = client.get(WS_PATH, params=API, headers=auth).json()
    assert_arm_error(client.patch(WS_PATH, params=API, headers=auth, json=body), 400, target=target)
    assert client.get(WS_PATH, params=API, headers=auth).json() == before


def test_missing_workspace_is_404_for_its_computes(client, auth):
    missing = f"{RG_PATH}/workspaces/nowhere"
    assert_arm_error(client.get(missing, params=API, headers=auth), 404, "ResourceNotFound", "workspaceName")
    assert_arm_error(client.get(f"{missing}/computes", params=API, headers=auth), 404, "ResourceNotFound",
                     "workspaceName")
    assert_arm_error(client.put(f"{missing}/computes/cpu", params=API, headers=auth, json=cluster()), 404,
                     "ResourceNotFound", "workspaceName")


BAD_WORKSPACE_PUTS = [
    pytest.param(f"{RG_PATH}/workspaces/ab", {"location": "local"}, "workspaceName", id="name too short"),
    pytest.param(f"{RG_PATH}/workspaces/_ws", {"location": "local"}, "workspaceName",
                 id="name leading underscore"),
    pytest.param(f"{RG_PATH}/workspaces/{'w' * 34}", {"location": "local"}, "workspaceName",
                 id="name too long"),
    pytest.param(f"/subscriptions/not-a-guid/resourceGroups/amlemu/providers/{PROVIDER}/workspaces/wsx",
                 {"location": "local"}, "subscriptionId", id="subscription not a GUID"),
    pytest.param(f"/subscriptions/{SUB}/resourceGroups/rg./providers/{PROVIDER}/workspaces/wsx",
                 {"location": "local"}, "resourceGroupName", id="resource group ends with dot"),
    pytest.param(f"{RG_PATH}/workspaces/wsx", {}, "location", id="location missing"),
    pytest.param(f"{RG_PATH}/workspaces/wsx", {"location": 3}, "location", id="location not a string"),
    pytest.param(f"{RG_PATH}/workspaces/wsx", {"location": "local", "tags": {"a": 1}}, "tags",
                 id="tag not string"),
    pytest.param(f"{RG_PATH}/workspaces/wsx", {"location": "local", "properties": "x"}, "properties",
                 id="properties not an object"),
    pytest.param(f"{RG_PATH}/workspaces/wsx", {"location": "local", "properties": {"friendlyName": 5}},
                 "properties.friendlyName", id="friendlyName not a string"),
    pytest.param(f"{RG_PATH}/workspaces/wsx", ["location"], "body", id="body is a list"),
    pytest.param(WS_PATH, {"location": "local", "tags": {"a": ["b"]}}, "tags", id="update of the default"),
    pytest.param(WS_PATH, {"location": "local", "properties": {"managedNetwork": {"isolationMode": "Open"}}},
                 "properties.managedNetwork.isolationMode", id="unknown isolation mode"),
    pytest.param(WS_PATH, {"location": "local", "properties": {"managedNetwork": {
        "isolationMode": "Disabled", "outboundRules": {"r": {"type": "ServiceTag"}}}}},
                 "properties.managedNetwork.outboundRules", id="rules on a disabled network"),
    pytest.param(WS_PATH, {"location": "local", "properties": {"managedNetwork": {
        "isolationMode": "AllowInternetOutbound", "outboundRules": {"pe": {
            "type": "PrivateEndpoint", "destination": {"subresourceTarget": "blob"}}}}}},
                 "properties.managedNetwork.outboundRules.pe.destination.serviceResourceId",
                 id="private endpoint rule without its resource"),
    pytest.param(WS_PATH, {"location": "local", "properties": {"managedNetwork": {
        "isolationMode": "AllowInternetOutbound", "outboundRules": {"r": "pypi.org"}}}},
                 "properties.managedNetwork.outboundRules.r", id="rule not an object"),
]


@pytest.mark.parametrize("path,body,target", BAD_WORKSPACE_PUTS)
def test_bad_workspace_puts_change_nothing(shared, path, body, target):
    client, auth = shared.client, shared.auth
    before = (list_workspaces(client, auth), client.get(WS_PATH, params=API, headers=auth).json())
    response = client.put(path, params=API, headers=auth, json=body)
    error = assert_arm_error(response, 400, target=target)
    assert error["code"] in ("ValidationError", "InvalidRequestContent")
    assert (list_workspaces(client, auth), client.get(WS_PATH, params=API, headers=auth).json()) == before


# --------------------------------------------------------------------------------------------------------
# Routing: case-insensitive segments, any api-version
# --------------------------------------------------------------------------------------------------------

def test_routes_are_case_insensitive(client, auth):
    put_cluster(client, auth, "cpu-1")
    shouting = (f"/SUBSCRIPTIONS/{SUB}/RESOURCEGROUPS/AMLEMU/PROVIDERS/microsoft.machinelearningservices"
                "/WORKSPACES/amlemu/COMPUTES")
    listed = client.get(shouting, params=API, headers=auth)
    assert listed.status_code == 200, listed.text
    assert [c["name"] for c in listed.json()["value"]] == ["cpu-1"]
    assert listed.json()["value"] == list_computes(client, auth)

    one = client.get(f"{shouting}/CPU-1", params=API, headers=auth)
    assert one.status_code == 200 and one.json()["name"] == "cpu-1"
    assert client.post(f"{shouting}/CPU-1/LISTNODES", params=API, headers=auth).json() == \
        {"nodes": [], "nextLink": None}
    sizes = client.get(f"/subscriptions/{SUB}/Providers/MICROSOFT.MachineLearningServices"
                       "/LOCATIONS/local/VMSIZES",
                       params=API, headers=auth)
    assert sizes.status_code == 200 and len(sizes.json()["value"]) == len(vm_sizes.VM_SIZES)
    ws = client.get(f"/subscriptions/{SUB}/resourcegroups/AmLeMu/providers/{PROVIDER.lower()}"
                    "/workspaces/AMLEMU",
                    params=API, headers=auth)
    assert ws.status_code == 200 and ws.json()["id"] == WS_PATH

    # An update through another spelling of the name updates the same cluster.
    updated = client.put(f"{shouting}/CPU-1", params=API, headers=auth, json=cluster(max_nodes=5))
    assert updated.status_code == 200, updated.text
    assert [c["name"] for c in list_computes(client, auth)] == ["cpu-1"]
    assert list_computes(client, auth)[0]["properties"]["properties"]["scaleSettings"]["maxNodeCount"] == 5


@pytest.mark.parametrize("query", [{}, {"api-version": "2024-10-01"}, {"api-version": "2023-08-01-preview"},
                                   {"api-version": "1999-01-01"}, {"api-version": "not-a-version"},
                                   {"api-version": ""}])
def test_any_api_version_is_served(shared, query):
    client, auth = shared.client, shared.auth
    assert client.get(COMPUTES, params=query, headers=auth).status_code == 200
    assert client.get(WS_PATH, params=query, headers=auth).status_code == 200
    assert client.get(f"{LOCATION_PATH}/vmSizes", params=query, headers=auth).status_code == 200


# --------------------------------------------------------------------------------------------------------
# Computes: create, update, read, nodes, delete
# --------------------------------------------------------------------------------------------------------

def test_compute_put_is_a_long_running_operation(client, auth):
    created = put_cluster(client, auth, "cpu-cluster", cluster(vm_size="standard_ds3_v2", max_nodes=3))
    assert created.headers["Retry-After"] == "1"
    match = OP_URL.match(created.headers["Azure-AsyncOperation"])
    assert match, created.headers["Azure-AsyncOperation"]
    body = created.json()
    assert body["id"] == f"{COMPUTES}/cpu-cluster"
    assert body["name"] == "cpu-cluster"
    assert body["type"] == f"{PROVIDER}/workspaces/computes"
    assert body["location"] == "local"
    assert body["tags"] == {"team": "ml"}
    props = body["properties"]
    assert props["computeType"] == "AmlCompute"
    assert props["provisioningState"] == "Creating"
    assert props["description"] == "test cluster"
    inner = props["properties"]
    assert inner["vmSize"] == "Standard_DS3_v2"  # the catalogue's spelling
    assert inner["vmPriority"] == "Dedicated"
    assert inner["scaleSettings"] == {"minNodeCount": 0, "maxNodeCount": 3,
                                      "nodeIdleTimeBeforeScaleDown": "PT2M"}

    status = client.get(created.headers["Azure-AsyncOperation"], headers=auth)
    assert status.status_code == 200
    assert status.headers["Retry-After"] == "1"
    op = status.json()
    assert op["status"] == "InProgress"
    assert op["name"] == match["id"]
    assert op["id"] == f"{LOCATION_PATH}/computeOperationsStatus/{match['id']}"
    assert op["endTime"] is None and op["error"] is None
    assert isodate.parse_datetime(op["startTime"]).tzinfo is not None


def test_compute_location_is_normalised_like_arm(client, auth):
    created = put_cluster(client, auth, "cpu-cluster", _with(("location",), "West Europe"))
    assert created.json()["location"] == "westeurope"
    url = created.headers["Azure-AsyncOperation"]
    assert "/locations/westeurope/computeOperationsStatus/" in url
    assert client.get(url, headers=auth).json()["status"] == "InProgress"


def test_second_put_is_an_update(client, auth):
    first = put_cluster(client, auth, "cpu-cluster")
    second = put_cluster(client, auth, "cpu-cluster", cluster(min_nodes=1, max_nodes=4), expected=200)
    assert second.headers["Retry-After"] == "1"
    first_op = OP_URL.match(first.headers["Azure-AsyncOperation"])["id"]
    second_op = OP_URL.match(second.headers["Azure-AsyncOperation"])["id"]
    assert first_op != second_op
    body = second.json()
    assert body["properties"]["provisioningState"] == "Updating"
    assert body["properties"]["properties"]["scaleSettings"]["minNodeCount"] == 1
    assert body["properties"]["properties"]["scaleSettings"]["maxNodeCount"] == 4
    assert body["properties"]["createdOn"] == first.json()["properties"]["createdOn"]
    assert len(list_computes(client, auth)) == 1
    op = client.get(second.headers["Azure-AsyncOperation"], headers=auth)
    assert op.json()["status"] == "InProgress" and op.headers["Retry-After"] == "1"


def test_get_compute_shows_the_cluster_status(client, auth):
    put_cluster(client, auth, "cpu-cluster")
    response = client.get(f"{COMPUTES}/cpu-cluster", params=API, headers=auth)
    assert response.status_code == 200
    inner = response.json()["properties"]["properties"]
    assert inner["allocationState"] == "Steady"
    assert isodate.parse_datetime(inner["allocationStateTransitionTime"]).tzinfo is not None
    assert inner["currentNodeCount"] == 0
    assert inner["targetNodeCount"] == 0
    assert inner["nodeStateCounts"] == dict.fromkeys(COUNT_KEYS, 0)
    assert response.json() == list_computes(client, auth)[0]


def test_nodes_show_in_status_list_nodes_and_usages(client, app, auth):
    put_cluster(client, auth, "cpu-cluster", cluster(vm_size="Standard_DS3_v2", max_nodes=4))
    add_nodes(app, "cpu-cluster", "running", "idle", "leaving", "unusable")
    inner = client.get(f"{COMPUTES}/cpu-cluster", params=API, headers=auth).json()["properties"]["properties"]
    assert inner["currentNodeCount"] == 2  # running + idle; leaving and unusable are not active
    assert inner["nodeStateCounts"] == {**dict.fromkeys(COUNT_KEYS, 0),
                                        "runningNodeCount": 1, "idleNodeCount": 1,
                                        "leavingNodeCount": 1, "unusableNodeCount": 1}

    nodes = client.post(f"{COMPUTES}/cpu-cluster/listNodes", params=API, headers=auth).json()
    assert nodes["nextLink"] is None
    assert [n["nodeState"] for n in nodes["nodes"]] == ["running", "idle", "leaving", "unusable"]
    for n in nodes["nodes"]:
        assert set(n) == {"nodeId", "privateIpAddress", "publicIpAddress", "port", "nodeState", "runId"}

    usages = {u["name"]["value"]: u for u in
              client.get(f"{LOCATION_PATH}/usages", params=API, headers=auth).json()["value"]}
    # the active DS3_v2 nodes and the leaving one (its VM is there until it is gone), 4 vCPUs each
    assert usages["TotalDedicatedCores"]["currentValue"] == 3 * 4
    assert usages["standardDSv2Family"]["currentValue"] == 12 and usages["standardDSv2Family"]["limit"] == 24
    assert usages["TotalLowPriorityCores"]["currentValue"] == 0


def test_list_nodes_shape(client, auth):
    put_cluster(client, auth, "cpu-cluster")
    response = client.post(f"{COMPUTES}/cpu-cluster/listNodes", params=API, headers=auth)
    assert response.status_code == 200
    assert response.json() == {"nodes": [], "nextLink": None}
    assert_arm_error(client.post(f"{COMPUTES}/missing/listNodes", params=API, headers=auth), 404,
                     "ResourceNotFound", "computeName")


def test_get_missing_compute_is_404(client, auth):
    assert_arm_error(client.get(f"{COMPUTES}/missing", params=API, headers=auth), 404, "ResourceNotFound",
                     "computeName")


def test_vm_sizes(client, auth):
    response = client.get(f"{LOCATION_PATH}/vmSizes", params=API, headers=auth)
    assert response.status_code == 200
    sizes = response.json()["value"]
    assert [s["name"] for s in sizes] == [s.name for s in vm_sizes.VM_SIZES]
    keys = {"name", "family", "vCPUs", "gpus", "osVhdSizeMB", "maxResourceVolumeMB", "memoryGB",
            "lowPriorityCapable", "premiumIO", "supportedComputeTypes"}
    assert all(set(s) == keys for s in sizes)
    ds3 = next(s for s in sizes if s["name"] == "Standard_DS3_v2")
    assert (ds3["vCPUs"], ds3["memoryGB"], ds3["family"], ds3["gpus"]) == (4, 14.0, "standardDSv2Family", 0)
    assert "AmlCompute" in ds3["supportedComputeTypes"]


def test_usages(client, auth):
    put_cluster(client, auth, "cpu-cluster")  # no nodes yet: nothing in use
    response = client.get(f"{LOCATION_PATH}/usages", params=API, headers=auth)
    assert response.status_code == 200
    body = response.json()
    assert body["nextLink"] is None
    usages = body["value"]
    names = [u["name"]["value"] for u in usages]
    assert names[:2] == ["TotalDedicatedCores", "TotalLowPriorityCores"]
    assert set(names[2:]) == {s.family for s in vm_sizes.VM_SIZES}
    for usage in usages:
        assert set(usage) == {"id", "amlWorkspaceLocation", "type", "unit", "currentValue", "limit", "name"}
        assert usage["id"] == f"{LOCATION_PATH}/usages/{usage['name']['value']}"
        assert usage["unit"] == "Count" and usage["currentValue"] == 0
        assert isinstance(usage["limit"], int) and usage["limit"] >= 0
        assert isinstance(usage["name"]["localizedValue"], str)


def test_delete_compute(client, auth):
    put_cluster(client, auth, "cpu-cluster")
    response = client.delete(f"{COMPUTES}/cpu-cluster", params={**API, "underlyingResourceAction": "Delete"},
                             headers=auth)
    assert response.status_code == 202
    assert response.content == b""
    assert OP_URL.match(response.headers["Azure-AsyncOperation"])
    assert response.headers["Location"] == response.headers["Azure-AsyncOperation"]
    assert response.headers["Retry-After"] == "1"
    op = client.get(response.headers["Location"], headers=auth)
    assert op.status_code == 200 and op.json()["status"] == "InProgress"
    compute = client.get(f"{COMPUTES}/cpu-cluster", params=API, headers=auth).json()
    assert compute["properties"]["provisioningState"] == "Deleting"


def test_delete_missing_compute_is_204(client, auth):
    response = client.delete(f"{COMPUTES}/never-existed", params=API, headers=auth)
    assert response.status_code == 204
    assert response.content == b""
    assert "Azure-AsyncOperation" not in response.headers


def test_delete_with_detach_is_accepted(client, auth):
    put_cluster(client, auth, "cpu-cluster")
    response = client.delete(f"{COMPUTES}/cpu-cluster", params={"underlyingResourceAction": "Detach"},
                             headers=auth)
    assert response.status_code == 202


def test_delete_with_a_bad_underlying_action_changes_nothing(client, auth):
    put_cluster(client, auth, "cpu-cluster")
    before = list_computes(client, auth)
    response = client.delete(f"{COMPUTES}/cpu-cluster", params={"underlyingResourceAction": "Shred"},
                             headers=auth)
    assert_arm_error(response, 400, "ValidationError", "underlyingResourceAction")
    assert list_computes(client, auth) == before


def test_put_on_a_deleting_compute_is_a_conflict(client, auth):
    put_cluster(client, auth, "cpu-cluster")
    assert client.delete(f"{COMPUTES}/cpu-cluster", params=API, headers=auth).status_code == 202
    before = list_computes(client, auth)
    response = client.put(f"{COMPUTES}/cpu-cluster", params=API, json=cluster(max_nodes=3), headers=auth)
    assert_arm_error(response, 409, "Conflict", "computeName")
    assert list_computes(client, auth) == before


def test_unknown_operation_is_404(client, auth):
    response = client.get(f"{LOCATION_PATH}/computeOperationsStatus/00000000-0000-0000-0000-00000000dead",
                          params=API, headers=auth)
    assert_arm_error(response, 404, "ResourceNotFound", "operationId")


def test_patch_updates_the_scale_settings(client, auth):
    put_cluster(client, auth, "cpu-cluster")
    response = client.patch(f"{COMPUTES}/cpu-cluster", params=API, headers=auth, json={
        "properties": {"properties": {"scaleSettings": {"minNodeCount": 1, "maxNodeCount": 6,
                                                        "nodeIdleTimeBeforeScaleDown": "PT300S"}}}})
    assert response.status_code == 200, response.text
    assert OP_URL.match(response.headers["Azure-AsyncOperation"])
    assert response.headers["Retry-After"] == "1"
    inner = list_computes(client, auth)[0]["properties"]["properties"]
    assert inner["scaleSettings"] == {"minNodeCount": 1, "maxNodeCount": 6,
                                      "nodeIdleTimeBeforeScaleDown": "PT5M"}
    assert inner["vmSize"] == "Standard_DS3_v2"


@pytest.mark.parametrize("name,body,status,code,target", [
    pytest.param("cpu-cluster", {}, 400, "ValidationError", "properties", id="no properties"),
    pytest.param("cpu-cluster", {"properties": {"properties": {}}}, 400, "ValidationError",
                 "properties.properties.scaleSettings", id="no scale"),
    pytest.param("cpu-cluster", {"properties": {"properties": {"scaleSettings": {"minNodeCount": 5,
                                                                                  "maxNodeCount": 2}}}},
                 400, "ValidationError", "properties.properties.scaleSettings.minNodeCount", id="min > max"),
    pytest.param("cpu-cluster", {"properties": "x"}, 400, "ValidationError", "properties",
                 id="properties not an object"),
    pytest.param("missing", {"properties": {"properties": {"scaleSettings": {"maxNodeCount": 2}}}},
                 404, "ResourceNotFound", "computeName", id="missing compute"),
    pytest.param("cpu-cluster", [1], 400, "InvalidRequestContent", "body", id="body is a list"),
])
def test_bad_patches_change_nothing(client, auth, name, body, status, code, target):
    put_cluster(client, auth, "cpu-cluster")
    before = list_computes(client, auth)
    response = client.patch(f"{COMPUTES}/{name}", params=API, headers=auth, json=body)
    assert_arm_error(response, status, code, target)
    assert list_computes(client, auth) == before


# --------------------------------------------------------------------------------------------------------
# Bad input matrix: every refusal is an ARM error naming the field, and changes nothing
# --------------------------------------------------------------------------------------------------------

def _with(path: tuple, value, body: dict | None = None) -> dict:
    """cluster() with one field (given by its path of keys) replaced."""
    body = body or cluster()
    node = body
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    return body


SCALE = ("properties", "properties", "scaleSettings")
NAME_CASES = [
    ("name too short", "ab"),
    ("name too long", "a" * 25),
    ("name leading digit", "1cluster"),
    ("name trailing dash", "cluster-"),
    ("name underscore", "cpu_cluster"),
    ("name leading dash", "-cluster"),
    ("name with dot", "cpu.cluster"),
]
# (id, body (JSON value or raw bytes), status, code, target)
BODY_CASES = [
    ("unknown vmSize", _with(("properties", "properties", "vmSize"), "Standard_Imaginary_v9"),
     400, "ValidationError", "properties.properties.vmSize"),
    ("vmSize not a string", _with(("properties", "properties", "vmSize"), 3),
     400, "ValidationError", "properties.properties.vmSize"),
    ("bad vmPriority", _with(("properties", "properties", "vmPriority"), "Spot"),
     400, "ValidationError", "properties.properties.vmPriority"),
    ("min > max", _with(SCALE, {"minNodeCount": 3, "maxNodeCount": 2}),
     400, "ValidationError", "properties.properties.scaleSettings.minNodeCount"),
    ("negative min", _with(SCALE, {"minNodeCount": -1, "maxNodeCount": 2}),
     400, "ValidationError", "properties.properties.scaleSettings.minNodeCount"),
    ("string max", _with(SCALE, {"minNodeCount": 0, "maxNodeCount": "2"}),
     400, "ValidationError", "properties.properties.scaleSettings.maxNodeCount"),
    ("float max", _with(SCALE, {"maxNodeCount": 2.5}),
     400, "ValidationError", "properties.properties.scaleSettings.maxNodeCount"),
    ("bool max", _with(SCALE, {"maxNodeCount": True}),
     400, "ValidationError", "properties.properties.scaleSettings.maxNodeCount"),
    ("zero max", _with(SCALE, {"maxNodeCount": 0}),
     400, "ValidationError", "properties.properties.scaleSettings.maxNodeCount"),
    ("max missing", _with(SCALE, {"minNodeCount": 0}),
     400, "ValidationError", "properties.properties.scaleSettings.maxNodeCount"),
    ("scaleSettings not an object", _with(SCALE, "0-2"),
     400, "ValidationError", "properties.properties.scaleSettings"),
    ("bad idle duration", _with(SCALE, {"maxNodeCount": 2, "nodeIdleTimeBeforeScaleDown": "2 minutes"}),
     400, "ValidationError", "properties.properties.scaleSettings.nodeIdleTimeBeforeScaleDown"),
    ("idle duration in months", _with(SCALE, {"maxNodeCount": 2, "nodeIdleTimeBeforeScaleDown": "P1M"}),
     400, "ValidationError", "properties.properties.scaleSettings.nodeIdleTimeBeforeScaleDown"),
    ("unknown computeType", _with(("properties", "computeType"), "QuantumCompute"),
     400, "ValidationError", "properties.computeType"),
    ("computeType not emulated", _with(("properties", "computeType"), "Databricks"),
     400, "ValidationError", "properties.computeType"),
    ("computeType missing", {"properties": {"properties": {"vmSize": "Standard_DS3_v2"}}},
     400, "ValidationError", "properties.computeType"),
    ("body is a JSON list", [cluster()], 400, "InvalidRequestContent", "body"),
    ("body is a JSON string", "AmlCompute", 400, "InvalidRequestContent", "body"),
    ("body is JSON null", b"null", 400, "InvalidRequestContent", "body"),
    ("malformed JSON", b'{"properties": {"computeType": "AmlCompute"', 400, "InvalidRequestContent", None),
    ("empty body", b"", 400, "InvalidRequestContent", "body"),
    ("properties missing", {"location": "local"}, 400, "ValidationError", "properties"),
    ("properties not an object", {"properties": "AmlCompute"}, 400, "ValidationError", "properties"),
    ("properties a list", {"properties": [{"computeType": "AmlCompute"}]},
     400, "ValidationError", "properties"),
    ("inner properties not an object", _with(("properties", "properties"), ["Standard_DS3_v2"]),
     400, "ValidationError", "properties.properties"),
    ("tags not strings", _with(("tags",), {"team": 1}), 400, "ValidationError", "tags"),
    ("tags not an object", _with(("tags",), ["team"]), 400, "ValidationError", "tags"),
    ("location not a string", _with(("location",), 7), 400, "ValidationError", "location"),
    ("location not a location name", _with(("location",), "local/../x"), 400, "ValidationError", "location"),
    ("empty location", _with(("location",), ""), 400, "ValidationError", "location"),
    ("identity not an object", _with(("identity",), "SystemAssigned"), 400, "ValidationError", "identity"),
    ("idle longer than ten years", _with(SCALE, {"maxNodeCount": 2, "nodeIdleTimeBeforeScaleDown": "P3651D"}),
     400, "ValidationError", "properties.properties.scaleSettings.nodeIdleTimeBeforeScaleDown"),
    ("empty vmSize", _with(("properties", "properties", "vmSize"), ""),
     400, "ValidationError", "properties.properties.vmSize"),
    ("description not a string", _with(("properties", "description"), {"text": "x"}),
     400, "ValidationError", "properties.description"),
]
EXISTING = "existing"
IMMUTABLE_CASES = [
    ("change vmSize of existing", EXISTING, cluster(vm_size="Standard_NC6"),
     400, "ValidationError", "properties.properties.vmSize"),
    ("change vmPriority of existing", EXISTING,
     _with(("properties", "properties", "vmPriority"), "LowPriority"),
     400, "ValidationError", "properties.properties.vmPriority"),
]

BAD_PUTS = (
    [pytest.param(name, cluster(), 400, "ValidationError", "computeName", id=case)
     for case, name in NAME_CASES]
    + [pytest.param(name, body, status, code, target, id=f"{case} [{name}]")
       for case, body, status, code, target in BODY_CASES for name in ("new-cluster", EXISTING)]
    + [pytest.param(*case[1:], id=case[0]) for case in IMMUTABLE_CASES]
)


@pytest.fixture
def existing(client, auth) -> dict:
    """A cluster already there, so refused updates can be seen to leave it alone."""
    return put_cluster(client, auth, EXISTING, cluster(max_nodes=3)).json()


@pytest.fixture(scope="module")
def shared_existing(shared) -> dict:
    return put_cluster(shared.client, shared.auth, EXISTING, cluster(max_nodes=3)).json()


@pytest.mark.parametrize("name,body,status,code,target", BAD_PUTS)
def test_bad_compute_puts_change_nothing(shared, shared_existing, name, body, status, code, target):
    client, auth = shared.client, shared.auth
    before = list_computes(client, auth)
    assert [c["name"] for c in before] == [EXISTING]
    if isinstance(body, bytes):
        response = client.put(f"{COMPUTES}/{name}", params=API, content=body,
                              headers={**auth, "Content-Type": "application/json"})
    else:
        response = client.put(f"{COMPUTES}/{name}", params=API, json=body, headers=auth)
    error = assert_arm_error(response, status, code, target)
    if target is None:
        assert "JSON" in error["message"]
    else:  # the message names the field too ("VM size" for vmSize, "Compute type" for computeType)
        assert target.rsplit(".", 1)[-1].lower() in error["message"].lower().replace(" ", ""), error
    assert "Azure-AsyncOperation" not in response.headers
    assert list_computes(client, auth) == before


UNSUPPORTED = (400, "OperationNotSupported")
ROUTE_CASES = [
    # (method, path, status, code, what the message names)
    ("GET", "/nothing/here", 404, "NoRegisteredProviderFound", "GET /nothing/here"),
    ("GET", "/tenants", 404, "NoRegisteredProviderFound", "GET /tenants"),
    # Azure ML addresses no route serves: an operation amlemu does not support yet, said so
    ("GET", f"{WS_PATH}/notAResourceType", *UNSUPPORTED, "list not a resource type of workspace 'amlemu'"),
    ("GET", f"{COMPUTES}/{EXISTING}/unknownAction", *UNSUPPORTED, f"list unknown action of compute '{EXISTING}'"),
    ("POST", f"{COMPUTES}/{EXISTING}/frobnicate", *UNSUPPORTED, f"frobnicate on compute '{EXISTING}'"),
    ("GET", f"{LOCATION_PATH}/notAThing", *UNSUPPORTED, "list not a thing of location"),
    ("PUT", f"{COMPUTES}/{EXISTING}/listNodes", *UNSUPPORTED, f"PUT list nodes of compute '{EXISTING}'"),
    ("GET", f"{COMPUTES}/{EXISTING}/listNodes", *UNSUPPORTED, f"list list nodes of compute '{EXISTING}'"),
    ("POST", f"{COMPUTES}/{EXISTING}", *UNSUPPORTED, f"POST compute '{EXISTING}' of workspace"),
    ("POST", COMPUTES, *UNSUPPORTED, "computes on workspace 'amlemu'"),
    ("DELETE", COMPUTES, *UNSUPPORTED, "DELETE computes of workspace 'amlemu'"),
    ("POST", WS_PATH, *UNSUPPORTED, "POST workspace 'amlemu'"),
    ("DELETE", f"{LOCATION_PATH}/vmSizes", *UNSUPPORTED, "DELETE vm sizes of location"),
    ("PUT", f"{LOCATION_PATH}/usages", *UNSUPPORTED, "PUT usages of location"),
    ("PUT", f"{WS_PATH}/featuresets/scorer", *UNSUPPORTED, "create or update featureset 'scorer'"),
    ("GET", f"{WS_PATH}/featuresets", *UNSUPPORTED, "list featuresets of workspace 'amlemu'"),
    # one named resource of a kind amlemu cannot make: Azure's 404 for a resource that does not exist
    ("GET", f"{WS_PATH}/featuresets/scorer", 404, "ResourceNotFound", "get featureset 'scorer' of workspace"),
    ("POST", "/msi/token", 405, "MethodNotAllowed", "POST"),
    ("PUT", "/metadata/endpoints", 405, "MethodNotAllowed", "PUT"),
]


@pytest.mark.parametrize("method,path,status,code,named", ROUTE_CASES,
                         ids=[f"{m} {'/'.join(p.rsplit('/', 2)[-2:])} -> {s}" for m, p, s, _c, _n in ROUTE_CASES])
def test_unknown_routes_and_wrong_methods(shared, shared_existing, method, path, status, code, named):
    client, auth = shared.client, shared.auth
    before = list_computes(client, auth)
    response = client.request(method, path, params=API, headers=auth,
                              json=cluster() if method in ("PUT", "PATCH", "POST") else None)
    error = assert_arm_error(response, status, code)
    assert named in error["message"], error
    assert "No route" not in error["message"]
    if code in ("OperationNotSupported", "ResourceNotFound"):
        assert "amlemu does not support" in error["message"], error
    assert list_computes(client, auth) == before


# --------------------------------------------------------------------------------------------------------
# Bugs these tests found, now fixed: kept as regressions
# --------------------------------------------------------------------------------------------------------

def _put_raw(client, auth, name: str, raw: bytes):
    return client.put(f"{COMPUTES}/{name}", params=API, content=raw,
                      headers={**auth, "Content-Type": "application/json"})


def test_huge_idle_duration_is_a_400(client, auth, existing):
    before = list_computes(client, auth)
    response = client.put(f"{COMPUTES}/new-cluster", params=API, headers=auth,
                          json=_with(SCALE, {"maxNodeCount": 2,
                                             "nodeIdleTimeBeforeScaleDown": "P99999999999D"}))
    assert_arm_error(response, 400, "ValidationError",
                     "properties.properties.scaleSettings.nodeIdleTimeBeforeScaleDown")
    assert list_computes(client, auth) == before


def test_long_idle_time_survives_a_round_trip(client, auth):
    put_cluster(client, auth, "long-idle",
                _with(SCALE, {"maxNodeCount": 2, "nodeIdleTimeBeforeScaleDown": "P30D"}))
    scale = list_computes(client, auth)[0]["properties"]["properties"]["scaleSettings"]
    assert isodate.parse_duration(scale["nodeIdleTimeBeforeScaleDown"]) == timedelta(days=30)
    assert client.get(f"{LOCATION_PATH}/usages", params=API, headers=auth).status_code == 200


def test_non_latin1_location_is_refused_and_stores_nothing(client, auth, existing):
    before = list_computes(client, auth)
    response = client.put(f"{COMPUTES}/new-cluster", params=API, headers=auth,
                          json=_with(("location",), "東京"))
    assert response.status_code != 500, response.text
    assert_arm_error(response, 400, target="location")
    assert list_computes(client, auth) == before


@pytest.mark.parametrize("raw", [
    pytest.param(b'{"identity": {"type": NaN}, "properties": {"computeType": "AmlCompute"}}',
                 id="NaN in identity"),
    pytest.param(b'{"properties": {"computeType": "AmlCompute", "properties": {"extra": Infinity}}}',
                 id="Infinity in inner properties"),
])
def test_non_finite_numbers_are_refused_and_store_nothing(client, auth, existing, raw):
    before = list_computes(client, auth)
    response = _put_raw(client, auth, "new-cluster", raw)
    assert response.status_code != 500, response.text
    assert_arm_error(response, 400)
    assert list_computes(client, auth) == before


@pytest.mark.parametrize("inner", ["x", [1], 5])
def test_patch_with_non_object_inner_properties_is_a_400(client, auth, existing, inner):
    before = list_computes(client, auth)
    response = client.patch(f"{COMPUTES}/{EXISTING}", params=API, headers=auth,
                            json={"properties": {"properties": inner}})
    assert_arm_error(response, 400, "ValidationError")
    assert list_computes(client, auth) == before


# --------------------------------------------------------------------------------------------------------
# Bugs these tests found, now fixed: kept as regressions
# --------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("properties", ["x", [1], 5, True])
def test_workspace_patch_with_non_object_properties_is_a_400(client, auth, properties):
    before = client.get(WS_PATH, params=API, headers=auth).json()
    response = client.patch(WS_PATH, params=API, headers=auth, json={"properties": properties})
    assert_arm_error(response, 400, "ValidationError", "properties")
    assert client.get(WS_PATH, params=API, headers=auth).json() == before


def test_openapi_declares_every_path_parameter(client):
    document = client.get("/openapi.json").json()
    undeclared = {}
    for path, operations in document["paths"].items():
        for method, operation in operations.items():
            declared = {p["name"] for p in operation.get("parameters", []) if p["in"] == "path"}
            missing = set(re.findall(r"{(\w+)}", path)) - declared
            if missing:
                undeclared[f"{method.upper()} {path}"] = missing
    assert undeclared == {}


@pytest.mark.parametrize("name", ["Usages", "Metadata", "Token", "VMSizes"])
def test_compute_names_that_spell_route_keywords_keep_their_casing(client, auth, name):
    created = put_cluster(client, auth, name)
    assert created.json()["name"] == name
    assert [c["name"] for c in list_computes(client, auth)] == [name]
