"""Azure naming rules, checked before anything is stored."""

import pytest

from emulator.domain import names
from emulator.errors import ValidationFailed

# --------------------------------------------------------------------------------------------------------
# Compute names: 3-24 characters, letters, digits and '-', starting with a letter, not ending with '-'.
# --------------------------------------------------------------------------------------------------------

VALID_COMPUTE = [
    "abc",
    "cpu-cluster",
    "CPU-Cluster-01",
    "a1b",
    "a-1",
    "a--b",
    "Z9z",
    "a" * 24,
    "a" + "-" * 22 + "b",
]

INVALID_COMPUTE = [
    pytest.param("", id="empty"),
    pytest.param("a", id="one char"),
    pytest.param("ab", id="too short"),
    pytest.param("a" * 25, id="too long"),
    pytest.param("1abc", id="leading digit"),
    pytest.param("-abc", id="leading dash"),
    pytest.param("abc-", id="trailing dash"),
    pytest.param("ab_c", id="underscore"),
    pytest.param("ab c", id="space"),
    pytest.param("ab.c", id="dot"),
    pytest.param("abç", id="non-ascii letter"),
    pytest.param("abc\n", id="trailing newline"),
    pytest.param("abc/def", id="slash"),
]


@pytest.mark.parametrize("value", VALID_COMPUTE)
def test_valid_compute_names(value):
    assert names.compute_name(value) == value


@pytest.mark.parametrize("value", INVALID_COMPUTE)
def test_invalid_compute_names(value):
    with pytest.raises(ValidationFailed) as info:
        names.compute_name(value)
    assert info.value.target == "computeName"
    assert info.value.status == 400
    assert f"'{value}'" in info.value.message


# --------------------------------------------------------------------------------------------------------
# Workspace names: 3-33 characters, letters, digits, '-' and '_', starting with a letter or digit.
# --------------------------------------------------------------------------------------------------------

VALID_WORKSPACE = [
    "abc",
    "amlemu",
    "1ws",
    "my_workspace-01",
    "a__",
    "A-_",
    "w" * 33,
    "0" * 3,
]

INVALID_WORKSPACE = [
    pytest.param("", id="empty"),
    pytest.param("ab", id="too short"),
    pytest.param("w" * 34, id="too long"),
    pytest.param("_abc", id="leading underscore"),
    pytest.param("-abc", id="leading dash"),
    pytest.param("ab.c", id="dot"),
    pytest.param("ab c", id="space"),
    pytest.param("ab/c", id="slash"),
    pytest.param("wörk", id="non-ascii letter"),
    pytest.param("abc\n", id="trailing newline"),
]


@pytest.mark.parametrize("value", VALID_WORKSPACE)
def test_valid_workspace_names(value):
    assert names.workspace_name(value) == value


@pytest.mark.parametrize("value", INVALID_WORKSPACE)
def test_invalid_workspace_names(value):
    with pytest.raises(ValidationFailed) as info:
        names.workspace_name(value)
    assert info.value.target == "workspaceName"
    assert info.value.status == 400
    assert f"'{value}'" in info.value.message


# --------------------------------------------------------------------------------------------------------
# Resource groups and subscriptions (checked on workspace PUT).
# --------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("value", ["amlemu", "r", "rg_1-(test).x", "g" * 90])
def test_valid_resource_groups(value):
    assert names.resource_group(value) == value


@pytest.mark.parametrize("value", ["", "g" * 91, "ends-with-dot.", "has space", "slash/rg", "star*"])
def test_invalid_resource_groups(value):
    with pytest.raises(ValidationFailed) as info:
        names.resource_group(value)
    assert info.value.target == "resourceGroupName"


@pytest.mark.parametrize("value", ["00000000-0000-0000-0000-000000000000",
                                   "AbCdEf01-2345-6789-abcd-ef0123456789"])
def test_valid_subscriptions(value):
    assert names.subscription(value) == value


@pytest.mark.parametrize("value", ["", "sub", "00000000000000000000000000000000",
                                   "00000000-0000-0000-0000-00000000000g",
                                   "{00000000-0000-0000-0000-000000000000}"])
def test_invalid_subscriptions(value):
    with pytest.raises(ValidationFailed) as info:
        names.subscription(value)
    assert info.value.target == "subscriptionId"
