"""Blob bodies streamed in bounded memory: a request body into a staging file, a blob (or a range) out of one.

A body costs at most CHUNK bytes at a time, whatever the blob's size; disk writes and reads run off the
event loop, so a 2 GiB upload neither fills the api's memory nor stalls its other requests.
"""

import base64
import hashlib
from collections.abc import AsyncIterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO

from anyio import to_thread

from emulator.errors import BadRequest, RequestTooLarge

if TYPE_CHECKING:
    from emulator.services.blobs import BlobProps

CHUNK = 1 << 20  # bytes written or read at a time


@dataclass
class Staged:
    """A request body received into a file of blobs.tmp, not yet anywhere a reader looks."""
    path: Path
    md5: str  # base64
    size: int

    def check_md5(self, content_md5: str | None) -> None:
        if content_md5 is not None and content_md5 != self.md5:
            raise BadRequest(f"The MD5 value specified in the request ({content_md5}) did not match the MD5 of the "
                             f"content received ({self.md5}).", target="Content-MD5", code="Md5Mismatch")

    def discard(self) -> None:
        self.path.unlink(missing_ok=True)


@dataclass
class Reading:
    """An open blob (the version read, even if replaced meanwhile), its properties and the byte range to send."""
    handle: BinaryIO
    props: "BlobProps"
    start: int
    end: int  # inclusive
    ranged: bool

    @property
    def length(self) -> int:
        return self.end - self.start + 1

    def read_all(self) -> bytes:
        """The range at once: only for the small ranges whose MD5 a client asks for."""
        try:
            self.handle.seek(self.start)
            return self.handle.read(self.length)
        finally:
            self.handle.close()

    def chunks(self) -> Iterator[bytes]:
        try:
            self.handle.seek(self.start)
            left = self.length
            while left > 0 and (chunk := self.handle.read(min(CHUNK, left))):
                left -= len(chunk)
                yield chunk
        finally:
            self.handle.close()


def too_large(limit: int, target: str) -> RequestTooLarge:
    return RequestTooLarge(f"The request body is larger than the {limit} bytes this operation accepts.",
                           target=target, code="RequestBodyTooLarge")


async def receive(body: AsyncIterable[bytes], path: Path, limit: int) -> Staged:
    """Write the body to `path` in CHUNK-sized writes, computing its MD5 on the way; at most `limit` bytes."""
    digest, size, pending = hashlib.md5(), 0, bytearray()

    def write(out: BinaryIO, data: bytes) -> None:
        digest.update(data)
        out.write(data)

    with path.open("wb") as out:
        try:
            async for chunk in body:
                pending += chunk
                size += len(chunk)
                if size > limit:
                    raise too_large(limit, "body")
                if len(pending) >= CHUNK:
                    await to_thread.run_sync(write, out, bytes(pending))
                    pending.clear()
            await to_thread.run_sync(write, out, bytes(pending))
        except BaseException:  # the client went away, or the request was cancelled: leave nothing behind
            out.close()
            path.unlink(missing_ok=True)
            raise
    return Staged(path, base64.b64encode(digest.digest()).decode(), size)
