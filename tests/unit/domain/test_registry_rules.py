"""Registries, pure: names, ids, discovery documents, and the built-in azureml registry's curated environments."""

import pytest

from emulator.domain.assets import curated, versioned
from emulator.domain.registries import builtin, ids
from emulator.errors import Forbidden, NotFound, ValidationFailed

REF = ids.RegistryRef("sub", "rg", "azureml")


@pytest.mark.parametrize("name", ["abc", "azureml", "my_registry-01", "a" * 33])
def test_registry_names_azure_takes(name):
    assert ids.name(name) == name


@pytest.mark.parametrize("name", ["ab", "a" * 34, "-lead", "has space", "dot.ted"])
def test_registry_names_azure_refuses_name_the_field(name):
    with pytest.raises(ValidationFailed) as err:
        ids.name(name)
    assert err.value.target == "registryName"


def test_ids_are_the_forms_the_sdk_and_jobs_read():
    assert REF.arm_id == ("/subscriptions/sub/resourceGroups/rg/providers/Microsoft.MachineLearningServices"
                          "/registries/azureml")
    assert REF.asset_id("environments", "sklearn-1.5", "1") == ("azureml://registries/azureml/environments/sklearn-1.5"
                                                                "/versions/1")
    assert REF.asset_id("environments", "sklearn-1.5") == "azureml://registries/azureml/environments/sklearn-1.5"
    # a job naming the version id resolves to the same family and version
    reference = curated.parse(REF.asset_id("environments", "sklearn-1.5", "1"), "environmentId")
    assert (reference.curated.name, reference.version, reference.registry) == ("sklearn-1.5", "1", True)


def test_discovery_gives_the_scope_and_the_data_plane_host():
    doc = ids.discovery(REF, ["local"], "https://localhost:8443/", "tenant")
    assert (doc["subscriptionId"], doc["resourceGroup"], doc["registryName"]) == ("sub", "rg", "azureml")
    assert doc["primaryRegionResourceProviderUri"].endswith("/") and doc["regions"] == ["local"]


@pytest.mark.parametrize(("sent", "read"), [("ListViewType.ACTIVE_ONLY", "ActiveOnly"),
                                            ("ListViewType.ARCHIVED_ONLY", "ArchivedOnly"), ("All", "All"),
                                            (None, "ActiveOnly")])
def test_the_sdk_enum_spelling_of_list_view_reads_as_meant(sent, read):
    assert versioned.list_query(None, None, ids.list_view(sent)).view == read


def test_every_family_is_an_environment_with_the_workspace_body():
    grouped = builtin.containers("environments", "ActiveOnly")
    assert [g[0].name for g in grouped] == sorted(curated.CATALOGUE)
    for versions in grouped:
        assert [v.version for v in versions] == list(curated.VERSIONS)
        family = curated.CATALOGUE[versions[0].name]
        assert versions[-1].body == versioned.environment_version(curated.environment_body(family))
    assert builtin.containers("environments", "ArchivedOnly") == [] and builtin.containers("models", "All") == []


def test_names_match_without_case_and_unknowns_list_what_there_is():
    assert builtin.version("environments", "SKLEARN-1.5", curated.LATEST).name == "sklearn-1.5"
    with pytest.raises(NotFound) as err:
        builtin.container("environments", "sklearn-9.9")
    assert err.value.target == "name" and all(name in err.value.message for name in curated.CATALOGUE)
    with pytest.raises(NotFound) as err:
        builtin.version("environments", "sklearn-1.5", "99")
    assert err.value.target == "version" and "Its versions: 1" in err.value.message
    with pytest.raises(NotFound):
        builtin.container("models", "anything")


def test_a_write_is_refused_as_arm_refuses_an_unauthorised_action():
    error = builtin.refused(REF, "environments", "versions/write")
    assert isinstance(error, Forbidden) and error.code == "AuthorizationFailed" and error.target == "registryName"
    assert REF.arm_id in error.message and "read-only" in error.message
