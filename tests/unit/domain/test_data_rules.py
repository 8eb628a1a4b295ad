"""Data versions: body checks, whether the files at the path fit the type, and how a job input names one."""

import pytest

from emulator.domain.assets import data, versioned
from emulator.domain.ids import WorkspaceRef
from emulator.errors import ValidationFailed

SUB = "00000000-0000-0000-0000-000000000000"
WS = WorkspaceRef(SUB, "rg", "My-Workspace")
PROVIDER = "providers/Microsoft.MachineLearningServices"
URI = "azureml://datastores/workspaceblobstore/paths/LocalUpload/h/folder/"


def body(**props) -> dict:
    return {"properties": {"dataType": "uri_folder", "dataUri": URI, **props}}


def test_data_version_keeps_what_the_sdk_reads_back():
    spec = versioned.data_version(body(description="d", tags={"t": "v"}))
    assert spec["dataType"] == "uri_folder" and spec["dataUri"] == URI
    assert spec["description"] == "d" and spec["tags"] == {"t": "v"} and spec["isArchived"] is False
    assert "referencedUris" not in spec
    table = versioned.data_version(body(dataType="MLTable", referencedUris=["./rows.csv"]))
    assert table["dataType"] == "mltable" and table["referencedUris"] == ["./rows.csv"]


@pytest.mark.parametrize(("props", "target"), [
    ({"dataType": None}, "properties.dataType"),
    ({"dataType": "tabular"}, "properties.dataType"),
    ({"dataUri": None}, "properties.dataUri"),
    ({"dataUri": "http://example.com/data.csv"}, "properties.dataUri"),  # https: the owner's storage decides
    ({"dataUri": "./local/folder"}, "properties.dataUri"),
    ({"referencedUris": "rows.csv"}, "properties.referencedUris"),
    ({"referencedUris": [1]}, "properties.referencedUris"),
    ({"autoDeleteSetting": "soon"}, "properties.autoDeleteSetting"),
])
def test_bad_data_versions_name_the_field(props, target):
    with pytest.raises(ValidationFailed) as caught:
        versioned.data_version(body(**props))
    assert caught.value.target == target


@pytest.mark.parametrize(("data_type", "is_file", "is_dir", "has_mltable", "why"), [
    ("uri_file", True, False, False, None),
    ("uri_file", False, True, False, "it is a folder"),
    ("uri_file", False, False, False, "no file"),
    ("uri_folder", False, True, False, None),
    ("uri_folder", True, False, False, "it is a file"),
    ("mltable", False, True, True, None),
    ("mltable", False, True, False, "MLTable"),
    ("mltable", False, False, False, "no folder"),
])
def test_the_files_must_fit_the_type(data_type, is_file, is_dir, has_mltable, why):
    found = data.missing_files(data_type, URI, is_file, is_dir, has_mltable)
    assert found is None if why is None else why in found


@pytest.mark.parametrize(("uri", "expected"), [
    (f"/subscriptions/{SUB}/resourceGroups/rg/{PROVIDER}/workspaces/my-workspace/data/d/versions/2",
     data.DataRef("d", "2")),
    # the SDK's resolution of azureml:d@latest leaves the prefix on the name
    (f"/subscriptions/{SUB}/resourceGroups/rg/{PROVIDER}/workspaces/My-Workspace/data/azureml:d/versions/3",
     data.DataRef("d", "3")),
    (f"azureml:/subscriptions/{SUB}/resourceGroups/rg/{PROVIDER}/workspaces/My-Workspace/data/d/versions/1",
     data.DataRef("d", "1")),
    ("azureml:d:4", data.DataRef("d", "4")),
    ("azureml:d@latest", data.DataRef("d", None, "latest")),
    ("azureml://datastores/workspaceblobstore/paths/x/", None),
    (f"azureml://subscriptions/{SUB}/resourcegroups/rg/workspaces/My-Workspace/datastores/workspaceblobstore/paths/x",
     None),
])
def test_job_inputs_naming_a_data_asset(uri, expected):
    assert data.input_reference(WS, uri, "properties.inputs.d.uri") == expected


@pytest.mark.parametrize("uri", [
    f"/subscriptions/{SUB}/resourceGroups/rg/{PROVIDER}/workspaces/other/data/d/versions/2",
    "azureml:d@production",
])
def test_job_inputs_naming_another_workspace_or_label_are_refused(uri):
    with pytest.raises(ValidationFailed) as caught:
        data.input_reference(WS, uri, "properties.inputs.d.uri")
    assert caught.value.target == "properties.inputs.d.uri"


def test_an_azureml_prefix_on_an_asset_name_is_the_asset_name():
    assert versioned.unprefixed("azureml:d") == "d" and versioned.unprefixed("d") == "d"
