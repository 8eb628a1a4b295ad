"""Where a registry's asset files are: blob URLs of its own storage account. Pure.

A registry has no datastores. The SDK asks it for a container (tempdatarefs), uploads a model's or a data asset's
files there and registers the version with their URL (https://<account>.blob.<host>/<container>/<path>, host-style
as Azure's: the SDK reads a registry model's container off the URL's first path segment to download it); a
workspace asset shared into it gets its files copied there. A job or a deployment in any workspace mounts them
from that place.
"""

from emulator.domain.registries.ids import RegistryRef
from emulator.domain.storage import blob_access
from emulator.domain.storage.datastores import BlobLocation
from emulator.errors import ValidationFailed

# The URI a registry version's files are named by, per kind.
URI_FIELDS = {"codes": "codeUri", "models": "modelUri", "data": "dataUri"}


def location(ref: RegistryRef, uri: object, target: str) -> BlobLocation:
    """The blob folder or file `uri` names, which must be in the registry's own storage account."""
    own = blob_access.registry_account(ref)
    where = blob_access.blob_location(uri) if isinstance(uri, str) and uri.lower().startswith("https://") else None
    if where is None:
        raise ValidationFailed(f"{target} must be a blob URL in the storage of registry '{ref.name}' "
                               f"(https://{own}.blob.<host>/<container>/<path>, as tempdatarefs hands out), got "
                               f"{str(uri)[:200]!r}: a registry has no datastores.", target=target)
    account, container, blob = where
    if account != own:
        raise ValidationFailed(f"{target} points at storage account '{account[:64]}'; registry '{ref.name}' keeps "
                               f"its files in its own account, '{own}'.", target=target)
    try:
        blob_access.container_name(container)
        blob = blob.strip("/") and blob_access.blob_name(blob.strip("/"))
    except ValidationFailed as exc:
        raise ValidationFailed(f"{target}: {exc.message}", target=target) from exc
    return BlobLocation(account, container, blob)


def url(netloc: str, where: BlobLocation, folder: bool) -> str:
    """The host-style blob URL of files copied into a registry (a folder's ends with '/', as the SDK writes them)."""
    tail = f"/{where.blob}" if where.blob else ""
    return f"https://{where.account}.blob.{netloc}/{where.container}{tail}{'/' if folder and where.blob else ''}"
