"""A user's registry, pure: its ARM body, the references jobs and deployments make to its assets, shares, and
where its files may be."""

import pytest

from emulator.domain.assets import data, versioned
from emulator.domain.registries import ids, resource, storage
from emulator.domain.serving import deployments
from emulator.domain.storage import blob_access
from emulator.errors import ValidationFailed

REF = ids.RegistryRef("sub", "rg", "MyReg")
GUID = "f8b35c39-dcf7-5133-914c-239db6f705e6"


def test_the_primary_region_comes_first_and_is_added_when_left_out():
    spec = resource.validated({"location": "West US", "properties": {"regionDetails": [
        {"location": "eastus", "storageAccountDetails": [
            {"systemCreatedStorageAccount": {"storageAccountType": "Standard_GRS"}}]}]}})
    assert spec["location"] == "westus" and spec["identity"] == "SystemAssigned"
    assert spec["regions"] == [{"location": "westus", "storageAccountType": "Standard_LRS"},
                               {"location": "eastus", "storageAccountType": "Standard_GRS"}]
    assert resource.validated({"location": "eastus"})["regions"] == [
        {"location": "eastus", "storageAccountType": "Standard_LRS"}]


@pytest.mark.parametrize(("body", "target"), [
    ({}, "location"),
    ({"location": "east/us"}, "location"),
    ({"location": "eastus", "properties": {"regionDetails": {}}}, "properties.regionDetails"),
    ({"location": "eastus", "properties": {"regionDetails": [{"location": "!"}]}},
     "properties.regionDetails[0].location"),
    ({"location": "eastus", "properties": {"regionDetails": [{"location": "westus"}, {"location": "West US"}]}},
     "properties.regionDetails[1].location"),
    ({"location": "eastus", "properties": {"regionDetails": [{"location": "eastus", "storageAccountDetails": [
        {"systemCreatedStorageAccount": {"storageAccountType": "Floppy"}}]}]}},
     "properties.regionDetails[0].storageAccountDetails[0].systemCreatedStorageAccount.storageAccountType"),
    ({"location": "eastus", "properties": {"publicNetworkAccess": "Sometimes"}}, "properties.publicNetworkAccess"),
    ({"location": "eastus", "identity": {"type": "UserAssigned"}}, "identity.type"),
    ({"location": "eastus", "tags": {"a": 1}}, "tags"),
])
def test_a_bad_registry_body_is_refused_naming_the_field(body, target):
    with pytest.raises(ValidationFailed) as err:
        resource.validated(body)
    assert err.value.target == target


def test_a_registry_moves_no_region_but_changes_its_replicas():
    old = resource.validated({"location": "eastus"})
    assert resource.changed_fixed(old, resource.validated({"location": "westus"})) == "location"
    grown = resource.validated({"location": "eastus", "properties": {"regionDetails": [{"location": "westus"}]}})
    assert resource.changed_fixed(old, grown) is None


@pytest.mark.parametrize(("value", "expected"), [
    ("azureml://registries/r1/environments/e/versions/3", ids.AssetRef("r1", "environments", "e", "3", None)),
    ("azureml://registries/r1/models/m/labels/latest", ids.AssetRef("r1", "models", "m", None, "latest")),
    ("AzureML://Registries/r1/models/m/Labels/Latest", ids.AssetRef("r1", "models", "m", None, "latest")),
])
def test_references_to_a_registry_asset(value, expected):
    assert ids.is_asset_id(value)
    assert ids.asset_ref(value, expected.kind, "t") == expected


@pytest.mark.parametrize("value", ["azureml://registries/r1/models/m/versions/1",  # not the kind asked for
                                   "azureml://registries/r1/environments/e/labels/prod",  # latest only
                                   "azureml://registries/r1/environments/e"])
def test_a_bad_reference_names_the_field(value):
    with pytest.raises(ValidationFailed) as err:
        ids.asset_ref(value, "environments", "properties.environmentId")
    assert err.value.target == "properties.environmentId"


def test_a_deployment_may_serve_a_registry_model_and_environment_but_not_code():
    model = deployments.asset_ref("azureml://registries/r1/models/m/versions/2", "models", "properties.model")
    assert model == deployments.AssetRef("models", "m", "2", "r1")
    with pytest.raises(ValidationFailed):
        deployments.asset_ref("azureml://registries/r1/codes/c/versions/1", "codes", "codeId")


def test_a_stored_key_tells_its_registry():
    key = f"{REF.child_id('models', 'm')}/versions/1".lower()
    owner = ids.owner_of(key)
    assert owner.name == "myreg" and blob_access.registry_account(owner) == blob_access.registry_account(REF)
    assert ids.owner_of("/subscriptions/s/resourcegroups/r/providers/p/workspaces/w/models/m/versions/1") is None


def test_share_names_a_workspace_asset_by_the_workspace_guid():
    source = ids.source_asset(f"azureml://locations/eastus/workspaces/{GUID}/models/m/versions/3", "s")
    assert source == ids.SourceAsset(GUID, "models", "m", "3")
    for bad in (f"azureml://locations/eastus/workspaces/{GUID}/codes/c/versions/1", "azureml:m:3", None):
        with pytest.raises(ValidationFailed) as err:
            ids.source_asset(bad, "properties.sourceAssetId")
        assert err.value.target == "properties.sourceAssetId"
    with pytest.raises(ValidationFailed) as err:
        ids.import_properties({"properties": {"referenceType": "Path", "sourceAssetId": "x"}})
    assert err.value.target == "properties.referenceType"


def test_a_registrys_files_are_in_its_own_storage_only():
    own = blob_access.registry_account(REF)
    where = storage.location(REF, f"https://localhost:8443/blob/{own}/upload-1/model/", "properties.modelUri")
    assert (where.account, where.container, where.blob) == (own, "upload-1", "model")
    assert storage.url("h:8443", where, folder=True) == f"https://{own}.blob.h:8443/upload-1/model/"
    host_style = storage.location(REF, f"https://{own}.blob.localhost:8443/upload-1/m.pkl", "properties.modelUri")
    assert (host_style.container, host_style.blob) == ("upload-1", "m.pkl")
    for uri in ("azureml://datastores/workspaceblobstore/paths/m", "https://h/blob/someoneelse0000/c/m",
                f"https://h/blob/{own}/c/../x"):
        with pytest.raises(ValidationFailed) as err:
            storage.location(REF, uri, "properties.modelUri")
        assert err.value.target == "properties.modelUri"
    # a data version may be a blob URL in its shape; its owner decides where
    assert versioned.data_version({"properties": {"dataType": "uri_folder", "dataUri": "https://h/blob/a/c/d"}})
    assert data.TARGET == "properties.dataUri"
