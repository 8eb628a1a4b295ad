"""What the Azure CLI reads before any Azure ML call: the cloud's metadata in the shape its api-version gives, and
the subscriptions `az login` lists and `az account` shows."""

from tests.service.conftest import RESOURCE

SUB = "00000000-0000-0000-0000-000000000000"
WS_PATH = "/subscriptions/{sub}/resourceGroups/rg/providers/Microsoft.MachineLearningServices/workspaces/{name}"
API = {"api-version": "2022-12-01"}


def test_the_metadata_is_one_cloud_from_2022_09_01_on_and_a_list_before(client):
    listed = client.get("/metadata/endpoints", params={"api-version": "2020-06-01"}).json()
    single = client.get("/metadata/endpoints", params={"api-version": "2022-09-01"}).json()
    assert isinstance(listed, list) and listed == [single]
    assert single["name"] == "AzureMLEmulator" and single["resourceManager"] == RESOURCE + "/"
    assert single["authentication"]["audiences"] == [RESOURCE + "/"]


def test_the_metadata_before_2019_05_01_is_the_first_shape(client):
    """What `az cloud register --endpoint-resource-manager` reads in Azure CLI 2.72 and earlier."""
    first = client.get("/metadata/endpoints", params={"api-version": "2015-01-01"}).json()
    assert first["authentication"] == {"loginEndpoint": "https://login.microsoftonline.com/",
                                       "audiences": [RESOURCE + "/"]}
    assert first["galleryEndpoint"].startswith("https://") and first["graphEndpoint"].startswith("https://")
    assert client.get("/metadata/endpoints").json()[0]["name"] == "AzureMLEmulator"  # no api-version: the list


def test_subscriptions_are_the_default_one_and_those_holding_a_workspace(client, auth):
    assert client.put(WS_PATH.format(sub="11111111-2222-3333-4444-555555555555", name="other"), params=API,
                      headers=auth, json={"location": "local"}).status_code in (200, 201)
    listed = client.get("/subscriptions", params=API, headers=auth)
    assert listed.status_code == 200, listed.text
    ids = [s["subscriptionId"] for s in listed.json()["value"]]
    assert ids == [SUB, "11111111-2222-3333-4444-555555555555"]
    assert listed.json()["count"] == {"type": "Total", "value": 2}
    one = client.get(f"/subscriptions/{SUB}", params=API, headers=auth).json()
    assert one["id"] == f"/subscriptions/{SUB}" and one["state"] == "Enabled"
    assert one["tenantId"] == listed.json()["value"][0]["tenantId"]


def test_a_subscription_that_holds_nothing_is_not_found(client, auth):
    response = client.get("/subscriptions/99999999-0000-0000-0000-000000000000", params=API, headers=auth)
    assert response.status_code == 404
    assert response.json()["error"]["code"] == "SubscriptionNotFound"


def test_subscriptions_need_a_token(client):
    assert client.get("/subscriptions", params=API).status_code == 401


def test_a_caller_sees_only_the_subscriptions_it_may_read_in(client, auth, secret):
    """ARM lists the subscriptions the caller holds a role in: a token scoped to one workspace sees its own."""
    from tests.service.test_roles_api import bearer

    other_sub = "11111111-2222-3333-4444-555555555555"
    other_ws = WS_PATH.format(sub=other_sub, name="other")
    assert client.put(other_ws, params=API, headers=auth, json={"location": "local"}).status_code in (200, 201)
    scoped = bearer(secret, "Reader", scope=other_ws)
    listed = client.get("/subscriptions", params=API, headers=scoped).json()
    assert [s["subscriptionId"] for s in listed["value"]] == [other_sub]
    assert [s["subscriptionId"] for s in client.get("/subscriptions", params=API, headers=auth).json()["value"]] \
        == [SUB, other_sub]  # the emulated identity: Owner everywhere
