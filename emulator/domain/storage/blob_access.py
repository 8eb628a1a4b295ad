"""Blob store rules: account, container and blob names, and the shared access signatures the emulator mints.

A SAS here is Azure's query-string shape (sv, sr, sp, se, sig; an account SAS has ss and srt instead of sr) so
azure-storage-blob carries it over unchanged, but `sig` is an HMAC of (account, container, permissions, expiry) under
the emulator's secret.
"""

import base64
import hashlib
import hmac
import re
from collections.abc import Mapping
from datetime import datetime, timedelta
from urllib.parse import unquote, urlencode, urlsplit

from emulator.domain.ids import WorkspaceRef
from emulator.errors import Forbidden, ValidationFailed

SAS_VERSION = "2021-08-06"
SAS_LIFETIME = timedelta(days=1)
ALL_PERMISSIONS = "racwdl"
_ACCOUNT = re.compile(r"^[a-z0-9]{3,24}$")
# 3-63 characters: lower-case letters, digits and single hyphens, starting and ending with a letter or digit.
_CONTAINER = re.compile(r"^(?!.*--)[a-z0-9][a-z0-9-]{1,61}[a-z0-9]$")
_CONTROL = re.compile(r"[\x00-\x1f\x7f\\]")
MAX_BLOB_NAME = 1024
AZURE_STORAGE_SUFFIX = "core.windows.net"


def account_name(value: str) -> str:
    if not _ACCOUNT.fullmatch(value):
        raise ValidationFailed(f"Invalid storage account name '{value}': 3 to 24 lower-case letters and digits.",
                               target="account", code="InvalidResourceName")
    return value


def container_name(value: str) -> str:
    if not _CONTAINER.fullmatch(value):
        raise ValidationFailed(f"Invalid container name '{value}': 3 to 63 lower-case letters, digits and single "
                               "hyphens, starting and ending with a letter or digit.",
                               target="container", code="InvalidResourceName")
    return value


def blob_name(value: str) -> str:
    """Blob names become paths under the container's folder: no empty, '.' or '..' segments, no backslash."""
    segments = value.split("/")
    if not value or len(value) > MAX_BLOB_NAME or _CONTROL.search(value) \
            or any(s in ("", ".", "..") for s in segments):
        raise ValidationFailed(f"Invalid blob name '{value[:200]}': 1 to {MAX_BLOB_NAME} characters, '/'-separated "
                               "segments that are not empty, '.' or '..', without control characters or '\\'.",
                               target="blob", code="InvalidResourceName")
    return value


def _signature(secret: bytes, account: str, container: str, permissions: str, expiry: str, blob: str = "") -> str:
    """A blob SAS (sr=b) signs its blob's name too: it opens that one blob only. An account SAS signs no container
    (no container SAS has an empty one): it opens every container of its account."""
    message = "\n".join(("amlemu-sas", account, container, permissions, expiry, *([blob] if blob else []))).encode()
    return base64.b64encode(hmac.new(secret, message, hashlib.sha256).digest()).decode()


def format_expiry(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def mint(secret: bytes, account: str, container: str, now: datetime,
         permissions: str = ALL_PERMISSIONS, lifetime: timedelta = SAS_LIFETIME, blob: str = "") -> str:
    """The query string (without '?') of a container SAS, or with `blob` of a SAS for that blob alone."""
    expiry = format_expiry(now + lifetime)
    return urlencode({"sv": SAS_VERSION, "sr": "b" if blob else "c", "sp": permissions, "se": expiry,
                      "sig": _signature(secret, account, container, permissions, expiry, blob)})


def mint_account(secret: bytes, account: str, now: datetime, permissions: str = ALL_PERMISSIONS,
                 lifetime: timedelta = SAS_LIFETIME) -> str:
    """The query string of an account SAS for blobs: what a datastore's listSecrets hands out, as Azure's account
    key opens every container. The SDK reads a code version's files (a container of their own) with it."""
    expiry = format_expiry(now + lifetime)
    return urlencode({"sv": SAS_VERSION, "ss": "b", "srt": "sco", "sp": permissions, "se": expiry,
                      "sig": _signature(secret, account, "", permissions, expiry)})


def _parse_expiry(value: str) -> datetime:
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError as exc:
        raise Forbidden(f"Signed expiry '{value}' is not a valid time.", code="AuthenticationFailed",
                        target="se") from exc


def verify(secret: bytes, account: str, container: str, query: Mapping[str, str], now: datetime,
           needed: str, blob: str = "") -> None:
    """Raise Forbidden unless the query carries a valid, unexpired SAS for this container (or, sr=b, for the
    blob `blob` the request names; or, srt without sr, for the whole account) with `needed`."""
    sig, expiry, permissions = query.get("sig"), query.get("se"), query.get("sp", "")
    if not sig or not expiry:
        raise Forbidden("Server failed to authenticate the request: a shared access signature (sig, se) is "
                        "required; get one from startPendingUpload.", code="AuthenticationFailed", target="sig")
    if query.get("sr") == "b" and not blob:
        raise Forbidden("Server failed to authenticate the request: a blob's signature (sr=b) opens that blob "
                        "only.", code="AuthenticationFailed", target="sr")
    account_wide = "sr" not in query and "srt" in query
    expected = _signature(secret, account, "" if account_wide else container, permissions, expiry,
                          blob if query.get("sr") == "b" else "")
    if not hmac.compare_digest(expected.encode(), sig.encode()):
        raise Forbidden("Server failed to authenticate the request: the signature does not match this account "
                        "and container.", code="AuthenticationFailed", target="sig")
    moment = _parse_expiry(expiry)
    if moment.tzinfo is None or moment <= now:
        raise Forbidden(f"Server failed to authenticate the request: the signature expired at {expiry}.",
                        code="AuthenticationFailed", target="se")
    if needed not in permissions:
        raise Forbidden(f"This request needs permission '{needed}' that the signature (sp={permissions}) "
                        "does not grant.", code="AuthorizationPermissionMismatch", target="sp")


def resource_prefix(workspace: str) -> str:
    """The stem of the names of a workspace's dependent resources (key vault, application insights)."""
    return workspace.lower().replace("-", "").replace("_", "")[:14]


def legacy_account(workspace: str) -> str:
    """The storage account earlier versions gave a workspace: shared by every workspace whose names agree in
    their first 14 letters and digits (whatever their resource group). Kept for the start-up migration."""
    return f"{resource_prefix(workspace)}store"


def workspace_account(ref: WorkspaceRef) -> str:
    """The storage account of a workspace: its ARM `storageAccount` id and its blob URLs both use it. Up to 8
    letters and digits of its name, then 16 hex digits of a hash of its full, lower-cased ARM id: 16 to 24
    characters, [a-z0-9]. Accounts of two workspaces with names of the same stem differ in the hash, and of
    stems of different lengths in their length; a hash collision is refused when a workspace is created."""
    return _account(ref.name, ref.key)


def registry_account(ref) -> str:
    """The storage account of a registry (a RegistryRef: its assets' files), named as a workspace's is from
    its ARM id, which differs from any workspace's in its `/registries/` segment."""
    return _account(ref.name, ref.key)


def _account(name: str, key: str) -> str:
    stem = "".join(c for c in name.lower() if c.isascii() and c.isalnum())[:8]
    return stem + hashlib.sha256(key.encode()).hexdigest()[:16]


def account_id(subscription: str, resource_group: str, account: str) -> str:
    return (f"/subscriptions/{subscription}/resourceGroups/{resource_group}"
            f"/providers/Microsoft.Storage/storageAccounts/{account}")


def azure_container_url(account: str, container: str) -> str:
    """A container's URL in Azure's public-cloud form: what startPendingUpload hands out as a code version's blobUri.
    The SDK's code download parses only this form (its pattern names core.windows.net, whatever the cloud) and
    takes just the container and blob from it, reading them through the workspaceblobstore datastore's account
    URL on the emulator's own storage suffix; blob_location reads it as the account's, so nothing fetches it."""
    return f"https://{account}.blob.{AZURE_STORAGE_SUFFIX}/{container}"


def blob_location(uri: str) -> tuple[str, str, str] | None:
    """(account, container, blob path) of a blob URL the emulator handed out, path-style
    (`https://host/blob/<account>/<container>/<path>`) or host-style (`https://<account>.blob.<suffix>/<container>/<path>`,
    on the emulator's storage suffix or Azure's)."""
    parsed = urlsplit(uri)
    parts = [unquote(p) for p in parsed.path.split("/") if p]
    host = (parsed.hostname or "").split(".")
    if len(parts) >= 3 and parts[0] == "blob":
        return parts[1], parts[2], "/".join(parts[3:])
    if len(host) > 2 and host[1] == "blob" and parts:
        return host[0], parts[0], "/".join(parts[1:])
    return None


def with_account(uri: str, old: str, new: str) -> str | None:
    """The blob URL `uri` moved from account `old` to `new` (path- or host-style), or None if it is not on
    `old`: how the start-up migration rewrites the URIs earlier versions stored."""
    where = blob_location(uri)
    if where is None or where[0] != old:
        return None
    parsed = urlsplit(uri)
    if parsed.path.split("/")[1:3] == ["blob", old]:
        return parsed._replace(path=f"/blob/{new}" + parsed.path[len(f"/blob/{old}"):]).geturl()
    return parsed._replace(netloc=new + parsed.netloc[len(old):]).geturl()
