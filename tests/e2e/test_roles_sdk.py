"""Roles through the unmodified azure-ai-ml SDK: a token from `amlemu token --role Reader` reads computes, and a
create is Azure's 403 AuthorizationFailed."""

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from azure.ai.ml import MLClient
from azure.ai.ml.entities import AmlCompute
from azure.core.credentials import AccessToken
from azure.core.exceptions import HttpResponseError

pytestmark = pytest.mark.e2e
AMLEMU = Path(sys.executable).with_name("amlemu")


class Token:
    """A bearer token as a credential: what the README shows a user."""

    def __init__(self, value: str):
        self.value = value

    def get_token(self, *scopes, **kwargs) -> AccessToken:
        return AccessToken(self.value, int(time.time()) + 3600)


def test_a_reader_lists_computes_but_cannot_create_one(ml_client, stack, rest, workspace_path):
    ml_client.compute.begin_create_or_update(AmlCompute(name="roles-cpu", size="Standard_DS3_v2",
                                                        max_instances=1)).result()
    token = subprocess.run([str(AMLEMU), "token", "--role", "Reader", "--workspace", stack.workspace,
                            "--principal", "reader-e2e"], env=os.environ, capture_output=True, text=True, check=True)
    reader = MLClient(Token(token.stdout.strip()), stack.subscription, stack.resource_group, stack.workspace)

    assert "roles-cpu" in [c.name for c in reader.compute.list()]
    with pytest.raises(HttpResponseError) as refused:
        reader.compute.begin_create_or_update(AmlCompute(name="roles-new", size="Standard_DS3_v2",
                                                         max_instances=1)).result()
    assert refused.value.status_code == 403
    assert refused.value.error.code == "AuthorizationFailed"
    assert "Microsoft.MachineLearningServices/workspaces/computes/write" in refused.value.message
    assert f"workspaces/{stack.workspace}/computes/roles-new" in refused.value.message
    assert "roles-new" not in [c.name for c in ml_client.compute.list()]

    # the same token over plain REST: reads pass, a delete is refused and changes nothing; its workspace list is its own
    bearer = {"Authorization": f"Bearer {token.stdout.strip()}"}
    api = {"api-version": "2024-10-01"}
    assert rest.get(f"{workspace_path}/computes/roles-cpu", params=api, headers=bearer).status_code == 200
    deleted = rest.delete(f"{workspace_path}/computes/roles-cpu", params=api, headers=bearer)
    assert deleted.status_code == 403 and deleted.json()["error"]["code"] == "AuthorizationFailed", deleted.text
    assert "workspaces/computes/delete" in deleted.json()["error"]["message"]
    assert rest.get(f"{workspace_path}/computes/roles-cpu", params=api).status_code == 200
    listed = rest.get(workspace_path.rsplit("/", 1)[0], params=api, headers=bearer).json()["value"]
    assert [w["name"] for w in listed] == [stack.workspace]
    ml_client.compute.begin_delete("roles-cpu").result()
