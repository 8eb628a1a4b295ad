"""Core quotas over REST: /_emulator/quotas shows and sets them (for every region, or one workspace's caps),
`list_usage` reports usage against them, and a compute beyond them is refused or warned about as Azure does. Bad
input gets an ARM error naming the field, and changes nothing."""

from tests.service.test_api import API, COMPUTES, LOCATION_PATH, assert_arm_error, cluster
from tests.service.test_instances import ci

QUOTAS = "/_emulator/quotas"


def _quotas(client, auth, **params) -> dict:
    response = client.get(QUOTAS, params=params, headers=auth)
    assert response.status_code == 200, response.text
    return response.json()


def _usages(client, auth) -> dict:
    response = client.get(f"{LOCATION_PATH}/usages", params=API, headers=auth)
    assert response.status_code == 200, response.text
    return {u["name"]["value"]: (u["currentValue"], u["limit"]) for u in response.json()["value"]}


def test_azures_defaults_are_in_force_until_set_then_list_usage_reports_the_new_limits(client, auth):
    limits = _quotas(client, auth)["limits"]
    assert (limits["totalDedicatedCores"], limits["lowPriorityCores"]) == (24, 100)
    assert limits["families"]["standardDSv2Family"] == 24 and limits["families"]["standardNCFamily"] == 0

    body = {"families": {"standardDSv2Family": 48}, "totalDedicatedCores": 96}
    response = client.put(QUOTAS, json=body, headers=auth)
    assert response.status_code == 200, response.text
    assert response.json()["override"] == body and response.json()["limits"]["totalDedicatedCores"] == 96
    used = _usages(client, auth)
    assert used["standardDSv2Family"] == (0, 48) and used["TotalDedicatedCores"] == (0, 96)
    assert used["TotalLowPriorityCores"] == (0, 100)

    capped = client.put(QUOTAS, params={"workspace": "amlemu"}, json={"lowPriorityCores": 8}, headers=auth).json()
    assert capped["workspace"] == "amlemu" and capped["limits"]["lowPriorityCores"] == 8
    assert capped["limits"]["totalDedicatedCores"] == 96  # the rest from the regional quotas
    assert _quotas(client, auth)["limits"]["lowPriorityCores"] == 100  # the region's is untouched
    reset = client.put(QUOTAS, json={"families": {"standardDSv2Family": None}}, headers=auth).json()
    assert reset["limits"]["families"]["standardDSv2Family"] == 24 and reset["override"] == {"totalDedicatedCores": 96}


def test_bad_quotas_name_their_field_and_change_nothing(client, auth):
    before = _quotas(client, auth)
    for body, target in (({"lowPriorityCores": -4}, "lowPriorityCores"), ({"families": {"nope": 4}}, "families.nope"),
                         ({"totalDedicatedCores": 1.5}, "totalDedicatedCores"), ({"gpus": 1}, "gpus"), ([], "body")):
        assert_arm_error(client.put(QUOTAS, json=body, headers=auth), 400, target=target)
    assert _quotas(client, auth) == before
    assert client.get(QUOTAS, params={"workspace": "missing"}, headers=auth).status_code == 404
    assert client.put(QUOTAS, json={"lowPriorityCores": 1}).status_code == 401


def test_an_instance_beyond_the_quota_is_refused_and_kept_nowhere(client, auth):
    error = assert_arm_error(client.put(f"{COMPUTES}/gpu-ci", params=API, json=ci(vmSize="Standard_NC6"),
                                        headers=auth), 400, target="properties.properties.vmSize")
    assert error["message"].startswith(
        "The specified subscription has a Standard NC family vCPU quota of 0 (0 in use) and cannot accomodate for "
        "at least 1 requested managed compute nodes which maps to 6 vCPUs.")
    assert client.get(f"{COMPUTES}/gpu-ci", params=API, headers=auth).status_code == 404

    # a stopped or running instance holds its cores: the seventh DS3 (4 vCPUs) is one too many
    for n in range(6):
        assert client.put(f"{COMPUTES}/ci-{n}", params=API, json=ci(), headers=auth).status_code == 201
    assert _usages(client, auth)["standardDSv2Family"] == (24, 24)
    error = assert_arm_error(client.put(f"{COMPUTES}/ci-6", params=API, json=ci(), headers=auth), 400)
    assert "Standard DSv2 family vCPU quota of 24 (24 in use)" in error["message"]


def test_a_cluster_whose_max_alone_exceeds_the_quota_is_accepted_with_a_warning_but_min_nodes_must_fit(client, auth):
    response = client.put(f"{COMPUTES}/big", params=API, json=cluster(max_nodes=10), headers=auth)
    assert response.status_code == 201, response.text
    (warning,) = response.json()["properties"]["properties"]["errors"]
    assert warning["error"]["code"] == "ClusterMaxNodesExceedCoreQuota"
    assert "maxNodeCount 10 maps to 40 vCPUs, above the Standard DSv2 family vCPU quota of 24" in \
        warning["error"]["message"] and "can only grow to 6 nodes" in warning["error"]["message"]
    assert client.put(QUOTAS, json={"families": {"standardDSv2Family": 40}, "totalDedicatedCores": 40},
                      headers=auth).status_code == 200
    fitting = client.put(f"{COMPUTES}/big", params=API, json=cluster(max_nodes=10), headers=auth)
    assert fitting.status_code == 200 and fitting.json()["properties"]["properties"]["errors"] is None

    error = assert_arm_error(client.put(f"{COMPUTES}/eager", params=API, json=cluster(min_nodes=11, max_nodes=12),
                                        headers=auth), 400, code="ClusterMinNodesExceedCoreQuota",
                             target="properties.properties.scaleSettings.minNodeCount")
    assert "vCPU quota of 40" in error["message"]
    assert client.get(f"{COMPUTES}/eager", params=API, headers=auth).status_code == 404


def test_azures_workspace_quota_api_lists_and_caps_a_family_each_update_with_its_status(client, auth):
    response = client.get(f"{LOCATION_PATH}/QUOTAS", params=API, headers=auth)
    assert response.status_code == 200, response.text
    listed = {q["name"]["value"]: q for q in response.json()["value"]}
    assert listed["standardDSv2Family"]["limit"] == 24 and listed["standardNCFamily"]["limit"] == 0
    quota_id = listed["standardDSv2Family"]["id"]
    assert quota_id.endswith("/workspaces/amlemu/quotas/standardDSv2Family")
    assert listed["standardDSv2Family"]["type"] == "Microsoft.MachineLearningServices/workspaces/quotas"

    body = {"location": "local", "value": [
        {"id": quota_id, "type": "Microsoft.MachineLearningServices/workspaces/quotas", "limit": 8, "unit": "Count"},
        {"id": quota_id.replace("standardDSv2Family", "standardNopeFamily"), "limit": 8},
        {"id": quota_id.replace("standardDSv2Family", "standardDv3Family"), "limit": 500}]}
    response = client.post(f"{LOCATION_PATH}/updateQuotas", params=API, json=body, headers=auth)
    assert response.status_code == 200, response.text
    assert [r["status"] for r in response.json()["value"]] == \
        ["Success", "InvalidVMFamilyName", "InvalidQuotaExceedsSubscriptionLimit"]
    assert _quotas(client, auth, workspace="amlemu")["limits"]["families"]["standardDSv2Family"] == 8
    assert _quotas(client, auth, workspace="amlemu")["limits"]["families"]["standardDv3Family"] == 24

    before = _quotas(client, auth, workspace="amlemu")
    for bad, target in (({"value": {}}, "value"), ({"value": [{"id": "nope", "limit": 1}]}, "value[0].id"),
                        ({"value": [{"id": quota_id, "limit": -1}]}, "value[0].limit")):
        assert_arm_error(client.post(f"{LOCATION_PATH}/updateQuotas", params=API, json=bad, headers=auth), 400,
                         target=target)
    assert _quotas(client, auth, workspace="amlemu") == before
