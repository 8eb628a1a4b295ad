"""Curated environments: the names a job gives them resolve to the catalogue's families, anything else says what
is known; the body each becomes builds with the environment builder like a user's own."""

import pytest

from emulator.domain.assets import curated, environments
from emulator.errors import ValidationFailed

T = "properties.environmentId"


@pytest.mark.parametrize(("named", "family", "version", "registry"), [
    ("azureml:AzureML-sklearn-1.5@latest", "sklearn-1.5", curated.LATEST, False),
    ("azureml:AzureML-sklearn-1.5:3", "sklearn-1.5", "3", False),
    ("azureml:azureml-LightGBM-3.3@latest", "lightgbm-3.3", curated.LATEST, False),
    ("azureml://registries/azureml/environments/sklearn-1.5/labels/latest", "sklearn-1.5", curated.LATEST, True),
    ("azureml://registries/azureml/environments/acpt-pytorch-2.2-cuda12.1/versions/12", "acpt-pytorch-2.2-cuda12.1",
     "12", True),
])
def test_both_spellings_name_a_family_and_a_version(named, family, version, registry):
    reference = curated.parse(named, T)
    assert (reference.curated.name, reference.version, reference.registry) == (family, version, registry)
    assert reference.workspace_name == f"AzureML-{family}"


@pytest.mark.parametrize("named", ["/subscriptions/s/resourceGroups/r/providers/p/workspaces/w/environments/e/"
                                   "versions/1", "azureml:my-env:1", "azureml:my-env@latest",
                                   # a user registry's: services/registry_assets finds it
                                   "azureml://registries/contoso/environments/sklearn-1.5/labels/latest"])
def test_a_workspace_or_user_registry_environment_is_no_curated_one(named):
    assert curated.parse(named, T) is None


@pytest.mark.parametrize(("named", "says"), [
    ("azureml:AzureML-sklearn-9.9@latest", "sklearn-1.5"),  # lists what is known
    ("azureml://registries/azureml/environments/nope/labels/latest", "lightgbm-3.3"),
    ("azureml:AzureML-sklearn-1.5@prod", "'latest' only"),
])
def test_unknown_names_registries_and_labels_are_refused_naming_the_field(named, says):
    with pytest.raises(ValidationFailed) as err:
        curated.parse(named, T)
    assert err.value.target == T and says in err.value.message


@pytest.mark.parametrize("family", sorted(curated.CATALOGUE))
def test_every_family_is_an_environment_the_builder_takes(family):
    body = curated.environment_body(curated.CATALOGUE[family])["properties"]
    spec = environments.parse_conda(body["condaFile"])
    assert spec.requirements and body["image"] == curated.BASE_IMAGE
    if "cuda" in family:  # a GPU family says in the job's log what stands in for it
        assert "CPU build" in body["tags"][curated.NOTE_TAG]
