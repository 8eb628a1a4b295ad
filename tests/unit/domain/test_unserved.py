"""Azure ML operations amlemu does not serve, named in plain words: which operation, on what, and whether Azure
would answer a missing resource's 404."""

import pytest

from emulator.domain.unserved import describe

WS = "/subscriptions/s/resourceGroups/rg/providers/Microsoft.MachineLearningServices/workspaces/ws"
PROVIDER = "/subscriptions/s/resourceGroups/rg/providers/Microsoft.MachineLearningServices"


@pytest.mark.parametrize(("method", "path", "operation", "missing"), [
    ("GET", f"{WS}/batchEndpoints", "list batch endpoints of workspace 'ws'", False),
    ("GET", f"{WS}/batchEndpoints/scorer", "get batch endpoint 'scorer' of workspace 'ws'", True),
    ("PUT", f"{WS}/batchEndpoints/scorer", "create or update batch endpoint 'scorer' of workspace 'ws'", False),
    ("DELETE", f"{WS}/schedules/nightly", "delete schedule 'nightly' of workspace 'ws'", False),
    ("PATCH", f"{WS}/connections/db", "update connection 'db' of workspace 'ws'", False),
    ("GET", f"{WS}/components/train/versions", "list versions of component 'train'", False),
    ("PUT", f"{WS}/components/train/versions/1", "create or update version '1' of component 'train'", False),
    ("GET", f"{WS}/batchEndpoints/e/deployments/blue", "get deployment 'blue' of batch endpoint 'e'", True),
    ("POST", f"{WS}/listKeys", "listKeys on workspace 'ws'", False),
    ("POST", f"{WS}/batchEndpoints/e/listKeys", "listKeys on batch endpoint 'e' of workspace 'ws'", False),
    ("GET", f"{PROVIDER}/registries", "list registries", False),
    ("GET", f"{PROVIDER}/registries/shared", "get registry 'shared'", True),
    ("GET", f"{WS}/featureStoreEntities", "list feature store entities of workspace 'ws'", False),
    ("GET", f"{WS}/notAResourceType", "list not a resource type of workspace 'ws'", False),
    ("GET", f"{WS}/indexes/docs/versions/2", "get version '2' of index 'docs'", True),
    ("get", WS.lower() + "/batchendpoints/x", "get batchendpoint 'x' of workspace 'ws'", True),  # ARM ignores case
])
def test_an_azure_ml_operation_is_named_in_words(method, path, operation, missing):
    found = describe(method, path)
    assert found is not None and found.operation == operation and found.missing_resource is missing
    assert operation in found.message and "amlemu does not support" in found.message


@pytest.mark.parametrize("path", ["/nothing/here", "/subscriptions", "/subscriptions/s/resourceGroups/rg",
                                  f"{PROVIDER}", f"{PROVIDER}/"])
def test_other_addresses_are_no_azure_ml_operation(path):
    assert describe("GET", path) is None
