"""ARM datastores: a workspace's default blob datastores, and the account SAS listSecrets hands out.

The SDK reads a datastore, asks listSecrets for a credential and builds the blob URL itself
(https://<account>.blob.<storage suffix>/<container>), which app.py routes to the blob API.
"""

from typing import Annotated, Any

from fastapi import APIRouter, Body, Depends, Query

from emulator.api.arm import datastores as arm
from emulator.api.deps import WS_PATH, Ctx, Ws, authorized
from emulator.domain.storage import datastores
from emulator.errors import NotSupported

router = APIRouter(dependencies=[Depends(authorized)])
DATASTORES = f"{WS_PATH}/datastores"
DATASTORE = DATASTORES + "/{name}"


@router.get(DATASTORES)
def list_datastores(ctx: Ctx, ws: Ws, is_default: Annotated[bool | None, Query(alias="isDefault")] = None) -> dict:
    stores, workspace = ctx.services.datastores.listed(ws, is_default)
    return {"value": [arm.datastore(s, workspace, ctx.settings) for s in stores], "nextLink": None}


@router.get(DATASTORE)
def get_datastore(ctx: Ctx, ws: Ws, name: str) -> dict:
    store, workspace = ctx.services.datastores.get(ws, name)
    return arm.datastore(store, workspace, ctx.settings)


@router.post(DATASTORE + "/listSecrets")
def list_secrets(ctx: Ctx, ws: Ws, name: str, body: Annotated[dict[str, Any] | None, Body()] = None) -> dict:
    return arm.sas_secrets(ctx.services.datastores.sas(ws, name, body))


@router.put(DATASTORE, operation_id="put_datastore")
@router.delete(DATASTORE, operation_id="delete_datastore")
def change_datastore(ws: Ws, name: str) -> None:
    raise NotSupported(f"amlemu serves the default datastores of workspace '{ws.name}' ({datastores.BLOB_STORE}, "
                       f"{datastores.ARTIFACT_STORE}) and does not support attaching, changing or deleting datastore "
                       f"'{name}' yet.", target="name")
