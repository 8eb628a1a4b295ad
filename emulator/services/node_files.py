"""A detached node's files on the api (workers/file_sync.py is the other end): what a rank reads, as a tar; its
log's new bytes, appended; what it wrote, unpacked into the workspace's storage before the node reports the end.

Only the node that claimed the rank, with its own token, while the rank's attempt is current, and only within
the paths the controller recorded for the rank when it sent it (dispatch/rank_files.py): a stale attempt's late
upload is refused, and is checked again before each file it writes, so it cannot overwrite a newer attempt's.
"""

import logging
import os
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path

import redis

from emulator import confined, confined_tar, tokens
from emulator.dispatch import protocol, rank_files
from emulator.dispatch.rank_files import Scope
from emulator.errors import Conflict, Forbidden, NotFound, RequestTooLarge, RuntimeUnavailable, Unauthorized
from emulator.settings import Settings

log = logging.getLogger("amlemu.api")
LOG_CHUNK_MAX = 8 << 20  # one append of a log's new bytes
_CHUNK = 1 << 20


def _normal(rel: str) -> str:
    return "/".join(confined.parts(rel))


class NodeFiles:
    def __init__(self, settings: Settings, secret: bytes, broker: redis.Redis | None = None):
        self.data_dir, self.secret = settings.data_dir, secret
        self.broker = broker or redis.Redis.from_url(settings.redis_url, socket_timeout=5, socket_connect_timeout=5)
        self.staging = settings.data_dir / ".node-files"

    def staging_path(self) -> Path:
        """Where an upload is received before it is unpacked (on the data folder's file system)."""
        return Path(self._staging_dir()) / uuid.uuid4().hex

    def scope(self, node_id: str, authorization: str | None, job: str, attempt: int, rank: int) -> Scope:
        """The rank's recorded scope, for the node that claimed it while its attempt is current."""
        if not tokens.node_token_valid(self.secret, node_id, authorization):
            raise Unauthorized("Authentication failed: not this node's token.", code="InvalidAuthenticationToken")
        try:
            return self._scope(node_id, job, attempt, rank)
        except redis.RedisError as exc:
            raise RuntimeUnavailable(f"The dispatch broker cannot be reached: {exc}.") from exc

    def _scope(self, node_id: str, job: str, attempt: int, rank: int) -> Scope:
        if not protocol.is_current(self.broker, job, attempt):
            raise Conflict(f"Attempt {attempt} of {job} is not current: its files are not taken or given any more.",
                           target="attempt", code="StaleAttempt")
        if rank_files.claimed_by(self.broker, job, attempt, rank) != node_id:
            raise Forbidden(f"Rank {rank} of attempt {attempt} of {job} is not this node's.", target="rank",
                            code="AuthorizationFailed")
        found = rank_files.recorded(self.broker, job, attempt, rank)
        if found is None:
            raise NotFound(f"No files are recorded for rank {rank} of attempt {attempt} of {job}.", target="rank")
        return found

    def reads(self, scope: Scope) -> Iterator[bytes]:
        """A tar of what the rank reads, packed as it is sent (what is not there is left out: the node says so as
        it lays it out). A node that goes away mid-way stops the packing."""
        readable, writable = os.pipe()

        def produce() -> None:
            try:
                with os.fdopen(writable, "wb") as out:
                    confined_tar.pack(self.data_dir, scope.reads, out)
            except BrokenPipeError:
                pass
            except Exception:  # the node finds the tar cut short, and the job fails saying so
                log.exception("could not pack a rank's files")
        threading.Thread(target=produce, name="node-files", daemon=True).start()
        with os.fdopen(readable, "rb") as source:
            while chunk := source.read(_CHUNK):
                yield chunk

    def append_log(self, scope: Scope, job: str, attempt: int, rank: int, offset: int, data: bytes) -> int:
        """Append the log's bytes from `offset` (of the node's copy): a chunk sent again is not appended twice.
        Returns how much of the node's log the workspace holds now."""
        key = rank_files.log_sent_key(job, attempt, rank)
        held = int(self.broker.get(key) or 0)
        if offset > held:
            raise Conflict(f"The log is held up to byte {held}; bytes from {offset} would leave a gap.",
                           target="offset", code="LogGap")
        fresh = data[held - offset:]
        if held + len(fresh) > scope.max_bytes:
            raise RequestTooLarge(f"The log passes this attempt's bound of {scope.max_bytes} bytes.",
                                  target="offset")
        if fresh:
            with confined.appending(self.data_dir, scope.log_file) as out:
                out.flush()
                out.buffer.write(fresh)
            self.broker.set(key, held + len(fresh), ex=protocol.CLAIM_TTL)
        return held + len(fresh)

    def receive(self, scope: Scope, job: str, attempt: int, staged: Path) -> int:
        """Unpack what the rank wrote into the workspace's storage; refused at the first member it may not write,
        or once its attempt is no longer current."""
        def allowed(rel: str) -> bool:
            if not protocol.is_current(self.broker, job, attempt):
                raise Conflict(f"Attempt {attempt} of {job} stopped being current during the upload.",
                               target="attempt", code="StaleAttempt")
            return scope.may_write(rel)
        try:
            with staged.open("rb") as stream:
                return confined_tar.unpack(self.data_dir, stream, allowed, scope.max_bytes)
        finally:
            staged.unlink(missing_ok=True)

    def remove(self, scope: Scope, job: str, attempt: int, rels: list[str]) -> int:
        """Remove what the rank removed from its writable mounts (those folders themselves stay: they are its
        mounts), while its attempt is current; refused at the first path it may not write. How many went."""
        removed = 0
        for rel in rels:
            if not protocol.is_current(self.broker, job, attempt):
                raise Conflict(f"Attempt {attempt} of {job} is not current: its files are not taken any more.",
                               target="attempt", code="StaleAttempt")
            if not scope.may_write(rel) or _normal(rel) in {_normal(root) for root in scope.writes}:
                raise Forbidden(f"{rel!r} is not within what this rank may write.", target="paths",
                                code="AuthorizationFailed")
            removed += confined.remove(self.data_dir, rel)
        return removed

    def _staging_dir(self) -> str:
        self.staging.mkdir(parents=True, exist_ok=True)
        return os.fspath(self.staging)
