"""ARM datastores: a workspace's default blob datastores, and the container SAS listSecrets hands out.

The SDK reads a datastore, asks listSecrets for a credential and builds the blob URL itself
(https://<account>.blob.<storage suffix>/<container>), which app.py routes to the blob API.
"""

from contextlib import suppress
from typing import Annotated, Any

from fastapi import APIRouter, Body, Depends, Query

from emulator.api.arm import datastores as arm_datastores
from emulator.api.deps import WS_PATH, Ctx, Ws, authorized
from emulator.domain.storage import blob_access, datastores
from emulator.domain.storage.datastores import Datastore
from emulator.errors import BadRequest
from emulator.services import workspaces
from emulator.services.blobs import BlobStore
from emulator.store.tables import Workspace

router = APIRouter(dependencies=[Depends(authorized)])
DATASTORES = f"{WS_PATH}/datastores"
DATASTORE = DATASTORES + "/{name}"


def _workspace(ctx: Ctx, ws: Ws) -> Workspace:
    with ctx.store.transaction() as repo:
        return workspaces.get(repo, ws)


def _served(ctx: Ctx, workspace: Workspace, stores: list[Datastore]) -> list[dict]:
    """The datastores' ARM shapes, once their containers exist: the SDK uploads to a datastore it is handed."""
    blobs = BlobStore(ctx.settings.data_dir)
    for store in stores:
        with suppress(FileExistsError):  # a concurrent request made it first
            blobs.create_container(store.account, store.container)
    return [arm_datastores.datastore(s, workspace, ctx.settings) for s in stores]


@router.get(DATASTORES)
def list_datastores(ctx: Ctx, ws: Ws, is_default: Annotated[bool | None, Query(alias="isDefault")] = None) -> dict:
    workspace = _workspace(ctx, ws)
    return {"value": _served(ctx, workspace, datastores.listed(ws, is_default)), "nextLink": None}


@router.get(DATASTORE)
def get_datastore(ctx: Ctx, ws: Ws, name: str) -> dict:
    workspace = _workspace(ctx, ws)
    return _served(ctx, workspace, [datastores.get(ws, name)])[0]


@router.post(DATASTORE + "/listSecrets")
def list_secrets(ctx: Ctx, ws: Ws, name: str, body: Annotated[dict[str, Any] | None, Body()] = None) -> dict:
    workspace = _workspace(ctx, ws)
    store = datastores.get(ws, name)
    lifetime = datastores.secret_lifetime(body)
    _served(ctx, workspace, [store])
    return arm_datastores.sas_secrets(blob_access.mint(ctx.secret, store.account, store.container, ctx.clock(),
                                                   lifetime=lifetime))


@router.put(DATASTORE, operation_id="put_datastore")
@router.delete(DATASTORE, operation_id="delete_datastore")
def change_datastore(ws: Ws, name: str) -> None:
    raise BadRequest(f"amlemu serves the default datastores of workspace '{ws.name}' ({datastores.BLOB_STORE}, "
                     f"{datastores.ARTIFACT_STORE}) and cannot attach, change or delete datastore '{name}'.",
                     target="name", code="OperationNotSupported")
