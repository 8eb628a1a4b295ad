"""The embedded blob store: blobs are plain files under <data_dir>/blobs/<account>/<container>/<blob name>.

Files stay byte-identical so job containers can mount them. Blob properties (MD5, metadata, content
headers) live in sidecar JSON files under <data_dir>/blobs.meta, keyed by a hash of the blob name, so the
blob tree holds nothing but the user's bytes. Bodies stream, in and out, in bounded memory: a request body is
written chunk by chunk (MD5 computed on the way) to a file in <data_dir>/blobs.tmp, on the blob tree's file
system but outside it (so neither a listing nor a job's mount sees a partial blob), then renamed into place.
"""

import base64
import contextlib
import hashlib
import json
import os
import shutil
import threading
import uuid
from collections.abc import AsyncIterable
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from emulator.domain.storage import blob_access
from emulator.errors import BadRequest, Conflict, NotFound, RangeNotSatisfiable
from emulator.services import blob_io
from emulator.services.blob_io import CHUNK, Reading, Staged

CONTENT_HEADERS = ("Content-Type", "Content-Encoding", "Content-Language", "Content-Disposition", "Cache-Control")


@dataclass
class BlobProps:
    name: str
    size: int
    md5: str | None  # base64, as Content-MD5 carries it
    etag: str
    created: str  # ISO 8601
    modified: str
    headers: dict[str, str] = field(default_factory=dict)
    metadata: dict[str, str] = field(default_factory=dict)
    mtime_ns: int = 0

    @property
    def modified_at(self) -> datetime:
        return datetime.fromisoformat(self.modified)

    @property
    def created_at(self) -> datetime:
        return datetime.fromisoformat(self.created)


def md5_b64(data: bytes) -> str:
    return base64.b64encode(hashlib.md5(data).digest()).decode()


def _etag() -> str:
    return f'"0x{uuid.uuid4().hex[:15].upper()}"'


class BlobStore:
    def __init__(self, data_dir: Path):
        self.root = data_dir / "blobs"
        self.meta = data_dir / "blobs.meta"
        self.tmp = data_dir / "blobs.tmp"

    def drop_account(self, account: str) -> None:
        """Everything stored under `account` goes (its workspace was deleted): moved out of sight at once, so that a
        workspace made again under the same name starts empty, then deleted in the background."""
        trash = self.tmp / f"dropped-{uuid.uuid4().hex}"
        trash.mkdir(parents=True)
        for tree, name in ((self.root, "blobs"), (self.meta, "meta")):
            with contextlib.suppress(FileNotFoundError):
                (tree / blob_access.account_name(account)).rename(trash / name)
        threading.Thread(target=shutil.rmtree, args=(trash, True), daemon=True, name="drop-account").start()

    # paths
    def container_dir(self, account: str, container: str) -> Path:
        return self.root / blob_access.account_name(account) / blob_access.container_name(container)

    def blob_path(self, account: str, container: str, name: str) -> Path:
        base = self.container_dir(account, container)
        path = base / blob_access.blob_name(name)
        resolved, root = path.resolve(), base.resolve()
        if resolved != root and root not in resolved.parents:
            raise BadRequest(f"Blob name '{name}' leaves its container.", target="blob", code="InvalidResourceName")
        return path

    def _sidecar(self, account: str, container: str, name: str) -> Path:
        digest = hashlib.sha256(name.encode()).hexdigest()
        return self.meta / account / container / digest[:2] / f"{digest}.json"

    def _staging(self) -> Path:
        self.tmp.mkdir(parents=True, exist_ok=True)
        return self.tmp / uuid.uuid4().hex

    # containers
    def create_container(self, account: str, container: str) -> bool:
        path = self.container_dir(account, container)
        if path.is_dir():
            return False
        path.mkdir(parents=True)
        return True

    def require_container(self, account: str, container: str) -> Path:
        path = self.container_dir(account, container)
        if not path.is_dir():
            raise NotFound(f"The specified container '{container}' does not exist.", target="container",
                           code="ContainerNotFound")
        return path

    # blob properties
    def props(self, account: str, container: str, name: str) -> BlobProps:
        if name.endswith("/"):
            # Valid in Azure, but no file here can have such a name: it never exists. The SDK asks for
            # "<model path>/" to tell a folder model from a file one (models.download) and wants a 404.
            raise NotFound(f"The specified blob '{name}' does not exist.", target="blob", code="BlobNotFound")
        path = self.blob_path(account, container, name)
        if not path.is_file():
            raise NotFound(f"The specified blob '{name}' does not exist.", target="blob", code="BlobNotFound")
        stat = path.stat()
        sidecar = self._sidecar(account, container, name)
        if sidecar.is_file():
            props = BlobProps(**json.loads(sidecar.read_text()))
            if props.size == stat.st_size and props.mtime_ns == stat.st_mtime_ns:
                return props
        # Written by something other than the Blob API (a job's outputs): describe the file as it is.
        moment = datetime.fromtimestamp(stat.st_mtime, UTC).isoformat()
        return BlobProps(name=name, size=stat.st_size, md5=None, etag=f'"0x{stat.st_mtime_ns:X}"',
                         created=moment, modified=moment, mtime_ns=stat.st_mtime_ns)

    def _exists(self, account: str, container: str, name: str) -> BlobProps | None:
        try:
            return self.props(account, container, name)
        except NotFound:
            return None

    def _save(self, account: str, container: str, props: BlobProps) -> BlobProps:
        props.mtime_ns = self.blob_path(account, container, props.name).stat().st_mtime_ns
        sidecar = self._sidecar(account, container, props.name)
        sidecar.parent.mkdir(parents=True, exist_ok=True)
        staged = self._staging()
        staged.write_text(json.dumps(asdict(props)))
        os.replace(staged, sidecar)
        return props

    # writes
    def _check_writable(self, account: str, container: str, name: str, if_none_match: str | None) -> Path:
        path = self.blob_path(account, container, name)
        if if_none_match == "*" and path.is_file():
            raise Conflict(f"The specified blob '{name}' already exists.", target="blob", code="BlobAlreadyExists")
        if path.is_dir():
            raise Conflict(f"'{name}' is a virtual directory of other blobs here; the emulated store cannot also "
                           "hold a blob of that name.", target="blob", code="BlobAlreadyExists")
        for parent in path.parents:
            if parent == self.root:
                break
            if parent.is_file():
                raise Conflict(f"A blob named '{parent.relative_to(self.container_dir(account, container))}' "
                               f"exists, so '{name}' cannot be stored beneath it.", target="blob",
                               code="BlobAlreadyExists")
        return path

    def _commit(self, account: str, container: str, name: str, staged: Path, md5: str,
                headers: dict[str, str], metadata: dict[str, str], now: datetime) -> BlobProps:
        path = self.blob_path(account, container, name)
        path.parent.mkdir(parents=True, exist_ok=True)
        previous = self._exists(account, container, name)
        os.replace(staged, path)
        created = previous.created if previous else now.isoformat()
        props = BlobProps(name=name, size=path.stat().st_size, md5=md5, etag=_etag(), created=created,
                          modified=now.isoformat(), headers=headers, metadata=metadata)
        return self._save(account, container, props)

    async def receive(self, body: AsyncIterable[bytes], limit: int) -> Staged:
        """The request body (at most `limit` bytes), in a staging file."""
        return await blob_io.receive(body, self._staging(), limit)

    def check_put(self, account: str, container: str, name: str, if_none_match: str | None = None) -> None:
        """What makes a Put Blob fail whatever its body: checked before the body is read."""
        self.require_container(account, container)
        self._check_writable(account, container, name, if_none_match)

    def put(self, account: str, container: str, name: str, staged: Staged, *, content_md5: str | None = None,
            if_none_match: str | None = None, headers: dict[str, str] | None = None,
            metadata: dict[str, str] | None = None, now: datetime) -> BlobProps:
        try:
            self.check_put(account, container, name, if_none_match)
            staged.check_md5(content_md5)
            return self._commit(account, container, name, staged.path, staged.md5, headers or {}, metadata or {},
                                now)
        finally:
            staged.discard()  # gone already if committed

    def set_metadata(self, account: str, container: str, name: str, metadata: dict[str, str],
                     now: datetime) -> BlobProps:
        props = self.props(account, container, name)
        props.metadata, props.etag, props.modified = metadata, _etag(), now.isoformat()
        return self._save(account, container, props)

    def delete(self, account: str, container: str, name: str) -> None:
        self.props(account, container, name)
        self.blob_path(account, container, name).unlink()
        self._sidecar(account, container, name).unlink(missing_ok=True)

    # reads
    def open(self, account: str, container: str, name: str,
             byte_range: tuple[int, int | None] | None = None) -> Reading:
        """The blob opened for reading the whole of it, or the inclusive byte range asked for."""
        props = self.props(account, container, name)
        if byte_range is None:
            start, end = 0, props.size - 1
        else:
            start, end = byte_range
            if start >= props.size:
                raise RangeNotSatisfiable(f"The range specified is invalid for the current size of the blob "
                                          f"({props.size} bytes).", target="x-ms-range", code="InvalidRange")
            end = props.size - 1 if end is None else min(end, props.size - 1)
        handle = self.blob_path(account, container, name).open("rb")
        return Reading(handle, props, start, end, byte_range is not None)

    def list_blobs(self, account: str, container: str, prefix: str = "") -> list[BlobProps]:
        """Every blob of the container whose name starts with prefix, in name order."""
        base = self.require_container(account, container)
        root = base.resolve()
        # Walk only the folder the prefix names (a run's listing must not read every job's files), reached without
        # a link: a name holds no '.', '..' or empty segment, so a prefix that does names no blob.
        folder = prefix.rpartition("/")[0]
        start = base / folder
        if folder and (any(s in ("", ".", "..") for s in folder.split("/")) or not start.is_dir()
                       or start.resolve() != root / folder):
            return []
        # a job's outputs may hold links: those leading out of the container are not blobs of it
        names = sorted(str(p.relative_to(base).as_posix()) for p in start.rglob("*")
                       if p.is_file() and (not p.is_symlink() or root in p.resolve().parents))
        return [self.props(account, container, n) for n in names if n.startswith(prefix)]

    # blocks (uploads above azure-storage-blob's single-put size)
    def _block_dir(self, account: str, container: str, name: str) -> Path:
        digest = hashlib.sha256(f"{account}/{container}/{name}".encode()).hexdigest()
        return self.tmp / "blocks" / digest

    def check_block(self, account: str, container: str, name: str, block_id: str) -> None:
        """What makes a Put Block fail whatever its body: checked before the body is read."""
        self.require_container(account, container)
        self.blob_path(account, container, name)
        if not block_id or len(block_id) > 128:
            raise BadRequest("blockid must be a base64 string of at most 64 bytes.", target="blockid",
                             code="InvalidQueryParameterValue")

    def put_block(self, account: str, container: str, name: str, block_id: str, staged: Staged,
                  content_md5: str | None) -> str:
        try:
            self.check_block(account, container, name, block_id)
            staged.check_md5(content_md5)
            blocks = self._block_dir(account, container, name)
            blocks.mkdir(parents=True, exist_ok=True)
            os.replace(staged.path, blocks / hashlib.sha256(block_id.encode()).hexdigest())
            return staged.md5
        finally:
            staged.discard()

    def commit_blocks(self, account: str, container: str, name: str, block_ids: list[str], *,
                      if_none_match: str | None = None, headers: dict[str, str] | None = None,
                      metadata: dict[str, str] | None = None, now: datetime) -> BlobProps:
        self.require_container(account, container)
        self._check_writable(account, container, name, if_none_match)
        blocks = self._block_dir(account, container, name)
        parts = [blocks / hashlib.sha256(b.encode()).hexdigest() for b in block_ids]
        missing = [b for b, p in zip(block_ids, parts, strict=True) if not p.is_file()]
        if missing:
            raise BadRequest(f"The specified block list is invalid: block '{missing[0]}' was never uploaded.",
                             target="BlockList", code="InvalidBlockList")
        staged, digest = self._staging(), hashlib.md5()
        with staged.open("wb") as out:
            for part in parts:
                with part.open("rb") as block:
                    while chunk := block.read(CHUNK):
                        digest.update(chunk)
                        out.write(chunk)
        props = self._commit(account, container, name, staged, base64.b64encode(digest.digest()).decode(),
                             headers or {}, metadata or {}, now)
        shutil.rmtree(blocks, ignore_errors=True)
        return props
