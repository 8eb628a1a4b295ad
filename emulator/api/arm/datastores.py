"""ARM shapes of datastores and their secrets."""

from emulator.api.arm.envelope import system_data, workspace_id
from emulator.domain.ids import PROVIDER
from emulator.domain.storage.datastores import Datastore
from emulator.services.rows import Workspace
from emulator.settings import Settings


def datastore(store: Datastore, workspace: Workspace, settings: Settings) -> dict:
    # endpoint is the cloud's storage suffix, as the cloud metadata serves it; credentials carry no secrets
    # (Azure's neither): the SDK asks listSecrets for them.
    return {"id": f"{workspace_id(workspace)}/datastores/{store.name}", "name": store.name,
            "type": f"{PROVIDER}/workspaces/datastores",
            "systemData": system_data(workspace.created_at, workspace.created_at),
            "properties": {"datastoreType": "AzureBlob", "accountName": store.account,
                           "containerName": store.container,
                           "endpoint": f"{settings.public_host}:{settings.public_port}", "protocol": "https",
                           "credentials": {"credentialsType": "AccountKey"}, "isDefault": store.is_default,
                           "serviceDataAccessAuthIdentity": "None",
                           "subscriptionId": workspace.subscription, "resourceGroup": workspace.resource_group,
                           "description": None, "tags": {}, "properties": {}}}


def sas_secrets(sas: str) -> dict:
    return {"secretsType": "Sas", "sasToken": sas}
