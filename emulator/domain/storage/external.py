"""Data outside the workspace: http(s), wasbs and abfss URIs a job input may name. Pure.

Each is read from one public HTTPS (or HTTP) URL: wasbs://<container>@<account>.blob.<suffix>/<path> and
abfss://<filesystem>@<account>.dfs.<suffix>/<path> are the anonymous blob URL
https://<account>.blob.<suffix>/<container>/<path>. Its key, the same for every way of writing it, is
<host>[:<port>]/<path segments>: where the user's mirror (`amlemu data mirror`) and the emulator's cache of
fetched files keep it, under the data folder. Every segment is checked after percent-decoding, so no key
leaves those folders ('..', '/', '\\', NUL and absolute paths are refused; the query never takes part).
"""

import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from urllib.parse import quote, unquote, urlencode, urlsplit

from emulator.errors import ValidationFailed

SCHEMES = ("https", "http", "wasbs", "abfss")
MIRROR_DIR = "mirror"  # under the data folder: what the user puts there, by key
CACHE_DIR = "external-cache"  # under the data folder: what the emulator fetched, by key
# In the workspace's default datastore: the copy a job mounts, named by its content (a job reads what was
# there when it was submitted, whatever the mirror holds later).
SNAPSHOT_FOLDER = ".amlemu-external"
FILE_TYPES = ("uri_file",)  # every other input type is a folder
_HOST = re.compile(r"^(?!.*\.\.)[a-z0-9]([a-z0-9.-]{0,251}[a-z0-9])?$")
_STORAGE_HOST = re.compile(r"^([a-z0-9]{3,24})\.(blob|dfs)\.([a-z0-9.-]+)$")
_CONTAINER = re.compile(r"^(?!.*--)[a-z0-9][a-z0-9-]{1,61}[a-z0-9]$")
_BAD_SEGMENT = re.compile(r"[\x00-\x1f\x7f/\\]")
MAX_SEGMENT_BYTES, MAX_SEGMENTS = 255, 64


@dataclass(frozen=True)
class ExternalUri:
    written: str  # as the user wrote it
    url: str  # the URL fetched: the canonical http(s) form, query kept
    host: str  # lower-case, with ':<port>' when one is given
    segments: tuple[str, ...]  # the path, percent-decoded, checked
    in_blob_storage: bool  # then the first segment is the container

    @property
    def key(self) -> str:
        """The relative path under the mirror and the cache."""
        return "/".join((self.host, *self.segments))

    @property
    def name(self) -> str:
        return self.segments[-1] if self.segments else ""


def is_external(uri: object) -> bool:
    return isinstance(uri, str) and uri.split("://", 1)[0].lower() in SCHEMES and "://" in uri


def _refuse(target: str, uri: str, why: str) -> ValidationFailed:
    return ValidationFailed(f"{target}: {uri[:200]!r} {why}", target=target)


def _segments(path: str, uri: str, target: str) -> tuple[str, ...]:
    segments = []
    for raw in path.split("/"):
        if not raw:
            continue  # '//' and the leading '/' name nothing
        try:
            segment = unquote(raw, errors="strict")
        except UnicodeDecodeError:
            raise _refuse(target, uri, "has a path segment that is not UTF-8 once percent-decoded.") from None
        if segment in (".", "..") or _BAD_SEGMENT.search(segment) or len(segment.encode()) > MAX_SEGMENT_BYTES:
            raise _refuse(target, uri, f"has a path segment amlemu cannot keep as a file name ({segment[:80]!r}): "
                          "no '.', '..', '/', '\\' or control characters, at most 255 bytes.")
        segments.append(segment)
    if len(segments) > MAX_SEGMENTS:
        raise _refuse(target, uri, f"is more than {MAX_SEGMENTS} folders deep.")
    return tuple(segments)


def _port(parts, uri: str, target: str) -> int | None:
    try:
        return parts.port
    except ValueError:
        raise _refuse(target, uri, "has a port that is not a number from 0 to 65535.") from None


def _storage(scheme: str, parts, uri: str, target: str) -> tuple[str, str]:
    """(blob host, container) of a wasbs or abfss URI."""
    container, at, host = parts.netloc.rpartition("@")
    storage = _STORAGE_HOST.fullmatch(host.lower())
    kind = "blob" if scheme == "wasbs" else "dfs"
    if not at or not storage or storage[2] != kind:
        raise _refuse(target, uri, f"must be {scheme}://<container>@<account>.{kind}.core.windows.net/<path>.")
    if not _CONTAINER.fullmatch(container):
        raise _refuse(target, uri, "names a container that is not 3 to 63 lower-case letters, digits and hyphens.")
    return f"{storage[1]}.blob.{storage[3]}", container


def _url(scheme: str, netloc: str, segments: tuple[str, ...], query: str) -> str:
    """Built again from the checked segments: what is fetched is what was checked."""
    path = "/".join(quote(s, safe="~@:!$&'()*+,;=") for s in segments)
    return f"{scheme}://{netloc}/{path}" + (f"?{query}" if query else "")


def parse(uri: str, target: str) -> ExternalUri:
    """An http(s), wasbs or abfss URI, checked, with its fetch URL and key."""
    try:
        parts = urlsplit(uri)
    except ValueError:
        raise _refuse(target, uri, "is not a URL.") from None
    scheme = parts.scheme.lower()
    if scheme not in SCHEMES:
        raise _refuse(target, uri, f"is not a URL amlemu reads: {', '.join(f'{s}://' for s in SCHEMES)}.")
    if scheme in ("wasbs", "abfss"):
        host, container = _storage(scheme, parts, uri, target)
        segments = (container, *_segments(parts.path, uri, target))
        return ExternalUri(uri, _url("https", host, segments, parts.query), host, segments, True)
    if "@" in parts.netloc:
        raise _refuse(target, uri, "carries a user name or password; give a public URL (a SAS in the query is "
                      "fine).")
    host, port = (parts.hostname or ""), _port(parts, uri, target)
    if not _HOST.fullmatch(host):
        raise _refuse(target, uri, "must name a host by DNS name or IPv4 address.")
    keyed = host if port is None or port == (443 if scheme == "https" else 80) else f"{host}:{port}"
    netloc = host if port is None else f"{host}:{port}"
    segments = _segments(parts.path, uri, target)
    return ExternalUri(uri, _url(scheme, netloc, segments, parts.query), keyed, segments,
                       in_blob_storage=bool(_STORAGE_HOST.fullmatch(host)))


def listing_url(uri: ExternalUri, marker: str = "") -> str:
    """Blob storage's List Blobs call for the folder `uri` names (its SAS kept), from `marker` on."""
    if not uri.in_blob_storage:
        raise ValueError("only blob storage lists a folder")
    parts = urlsplit(uri.url)
    prefix = "/".join(uri.segments[1:])
    asked = {"restype": "container", "comp": "list", **({"prefix": prefix + "/"} if prefix else {}),
             **({"marker": marker} if marker else {})}
    container = quote(uri.segments[0])
    return f"{parts.scheme}://{parts.netloc}/{container}?" + "&".join(q for q in (parts.query, urlencode(asked)) if q)


def listed_blobs(xml: bytes) -> tuple[list[tuple[str, int]], str]:
    """([(blob name, size)], the next page's marker or '') of a List Blobs answer."""
    try:
        root = ET.fromstring(xml)
    except ET.ParseError as exc:
        raise ValueError(f"the storage account's blob list is not XML ({exc})") from None
    blobs = [(blob.findtext("Name") or "", int(blob.findtext("Properties/Content-Length") or 0))
             for blob in root.iterfind("Blobs/Blob")]
    return blobs, root.findtext("NextMarker") or ""


def folder_files(uri: ExternalUri, blobs: list[tuple[str, int]], target: str) -> dict[tuple[str, ...], str]:
    """{path inside the folder: the file's fetch URL} for the folder's blobs; a blob that only marks a folder
    (a Data Lake directory, or a name ending in '/') is none. Each path is checked as the URL's own segments are."""
    prefix, parts = "/".join(uri.segments[1:]), urlsplit(uri.url)
    inside = {}
    for name, _size in blobs:
        if name.endswith("/") or (prefix and not name.startswith(prefix + "/")):
            continue
        rel = _segments(quote(name[len(prefix):].lstrip("/"), safe="/"), uri.written, target)
        if rel:
            inside[rel] = _url(parts.scheme, parts.netloc, (*uri.segments, *rel), parts.query)
    folders = {rel[:i] for rel in inside for i in range(1, len(rel))}
    return {rel: url for rel, url in inside.items() if rel not in folders}


def check_kind(uri: ExternalUri, input_type: str, target: str) -> None:
    """A file input must name a file; a folder of a plain web server cannot be listed, only mirrored."""
    if input_type in FILE_TYPES and (not uri.segments or uri.written.split("?")[0].endswith("/")
                                     or len(uri.segments) < 2 and uri.in_blob_storage):
        raise _refuse(target, uri.written, "names no file: a uri_file input is a URL of one file.")


def mirror_command(uri: str) -> str:
    return f"amlemu data mirror '{uri}' <file or folder>"


def unavailable(uri: ExternalUri, input_type: str, target: str, why: str) -> ValidationFailed:
    """The refusal when neither the mirror nor a fetch gives the input's data."""
    folder = input_type not in FILE_TYPES and not uri.in_blob_storage
    hint = (" A web server lists no folder: amlemu fetches folders from blob storage only, others come from the "
            "mirror." if folder else "")
    return ValidationFailed(
        f"{target}: {uri.written[:300]} is not in the mirror and {why}.{hint} Put a copy there with "
        f"`{mirror_command(uri.written)}` (or into <data folder>/{MIRROR_DIR}/{uri.key[:300]}), then submit again.",
        target=target)


def snapshot_path(digest: str, name: str | None) -> str:
    """The path, in the workspace's default datastore, of the copy a job reads: a file keeps its name."""
    if not re.fullmatch(r"[0-9a-f]{64}", digest):
        raise ValueError("a snapshot is named by a sha256 hex digest")
    return f"{SNAPSHOT_FOLDER}/{digest}" + (f"/{name}" if name else "")
