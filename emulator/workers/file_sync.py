"""A detached node's side of its files (the api's side: services/node_files.py). The node keeps its own data
folder on its own engine's host and never sees the emulator's: before a rank runs it fetches what the rank
reads, while it runs it sends the log's new bytes (so `ml_client.jobs.stream` shows them live), and at its end
it sends back what the rank wrote, before it reports the end. Everything goes over HTTPS to the api, with the
node's own token (the controller put it in the node's environment, which its jobs never see).
"""

import logging
import os
import ssl
import tempfile
import threading
from pathlib import Path

import httpx

from emulator import confined, confined_tar
from emulator.dispatch import rank_files
from emulator.dispatch.protocol import Attempt
from emulator.errors import EmulatorError, PathEscape

log = logging.getLogger("amlemu.node")
LOG_SECONDS = 0.25  # how often a running rank's log is looked at for new bytes
OUTPUT_SECONDS = 2.0  # how often what it wrote is looked at for changes
LOG_CHUNK = 4 << 20  # bytes of log sent in one request (the api takes at most 8 MiB)
_CHUNK = 1 << 20
API_URL, TOKEN, CA, VOLUME = rank_files.API_URL, rank_files.TOKEN, rank_files.CA, rank_files.VOLUME


class Stale(EmulatorError):
    """The api no longer takes or gives this attempt's files: it is not current any more."""


class FileSync:
    def __init__(self, api_url: str, node_id: str, token: str, ca_pem: str, data_dir: Path):
        context = ssl.create_default_context(cadata=ca_pem) if ca_pem else ssl.create_default_context()
        self.client = httpx.Client(base_url=api_url.rstrip("/"), verify=context,
                                   headers={"Authorization": f"Bearer {token}"},
                                   timeout=httpx.Timeout(120.0, connect=10.0))
        self.path, self.data_dir = f"/_emulator/nodes/{node_id}/files", data_dir
        self.fetched: dict[tuple[str, int, int], dict] = {}  # what each rank's writable mounts held once fetched

    @staticmethod
    def _rank(attempt: Attempt) -> dict:
        return {"job": attempt.job_key, "attempt": attempt.attempt, "rank": attempt.rank}

    @staticmethod
    def _check(response: httpx.Response) -> None:
        if response.status_code == 409 and b"StaleAttempt" in response.read():
            raise Stale(f"attempt no longer current: {response.text[:300]}")
        if response.status_code >= 400:
            raise EmulatorError(f"The emulator's api refused this node's files ({response.status_code}): "
                                f"{response.read()[:500].decode(errors='replace')}")

    def fetch(self, attempt: Attempt) -> None:
        """Replace the node's copies of what the rank reads and writes with the workspace's, before it is laid
        out as on any node."""
        scope = rank_files.scope(attempt)
        self.forget(attempt)
        with tempfile.TemporaryFile(dir=self.data_dir) as spool:
            with self.client.stream("GET", self.path, params=self._rank(attempt)) as response:
                self._check(response)
                for chunk in response.iter_bytes(_CHUNK):
                    spool.write(chunk)
            spool.seek(0)
            confined_tar.unpack(self.data_dir, spool, lambda rel: rank_files.inside(rel, scope.reads), 1 << 62)
        # not sent back unless the rank changes it
        self.fetched[_key(attempt)] = confined_tar.listing(self.data_dir, scope.writes)

    def send_log(self, attempt: Attempt, held: int) -> int:
        """Send the log's bytes past `held` (what the api holds); returns what it holds now."""
        while True:
            chunk = _read_from(self.data_dir, attempt.log_file, held, LOG_CHUNK)
            if not chunk:
                return held
            response = self.client.post(f"{self.path}/log", params={**self._rank(attempt), "offset": held},
                                        content=chunk)
            self._check(response)
            held = int(response.json()["held"])

    def send_changed(self, attempt: Attempt, sent: dict) -> dict:
        """Send what the rank wrote (its writable mounts) that changed since `sent` (what was sent before, as
        confined_tar.listing gives it), and what it removed since; returns what is sent now. Links and devices it
        planted are left out."""
        now = confined_tar.listing(self.data_dir, rank_files.scope(attempt).writes)
        if gone := _topmost([rel for rel in sent if rel not in now]):  # as a mount would: the workspace's go too
            self._check(self.client.post(f"{self.path}/removed", params=self._rank(attempt), json={"paths": gone}))
        changed = [rel for rel, seen in now.items() if rel not in sent or (seen is not None and sent[rel] != seen)]
        if not changed:
            return now
        with tempfile.TemporaryFile(dir=self.data_dir) as spool:
            confined_tar.pack(self.data_dir, changed, spool, recursive=False)
            spool.seek(0)
            response = self.client.put(self.path, params=self._rank(attempt),
                                       content=iter(lambda: spool.read(_CHUNK), b""))
        self._check(response)
        return now

    def forget(self, attempt: Attempt) -> None:
        """Remove the node's copies of the rank's files (the next rank fetches its own)."""
        scope = rank_files.scope(attempt)
        self.fetched.pop(_key(attempt), None)
        for rel in (*scope.reads, *scope.writes, scope.log_file):
            confined.remove(self.data_dir, rel)


def _key(attempt: Attempt) -> tuple[str, int, int]:
    return attempt.job_key, attempt.attempt, attempt.rank


def _topmost(rels: list[str]) -> list[str]:
    """`rels` without those inside another of them (a folder removed takes what it held)."""
    kept: set[str] = set()
    for rel in sorted(rels, key=len):
        names = rel.split("/")
        if not any("/".join(names[:i]) in kept for i in range(1, len(names))):
            kept.add(rel)
    return sorted(kept)


def _read_from(root: Path, rel: str, offset: int, limit: int) -> bytes:
    """Up to `limit` bytes of the file `rel` from `offset`, reached without following a link (the job writes it)."""
    *folders, name = confined.parts(rel)
    try:
        with confined.directory(root, "/".join(folders) or ".") as parent:
            fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=parent)
    except (OSError, PathEscape):
        return b""
    try:
        return os.pread(fd, limit, offset)
    finally:
        os.close(fd)


class Uploads:
    """Sends a running rank's new log bytes every LOG_SECONDS and what it wrote every OUTPUT_SECONDS, as a shared
    node's jobs write straight into the workspace: a node killed or preempted mid-job leaves its outputs so far
    (a checkpoint) for the next attempt. `stop` sends the rest and returns."""

    def __init__(self, files: FileSync, attempt: Attempt):
        self.files, self.attempt, self.held = files, attempt, 0
        self.sent = files.fetched.pop(_key(attempt), {})
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self._run, name="uploads", daemon=True)
        self.thread.start()

    def _run(self) -> None:
        looks = 0
        while not self.stopping.wait(LOG_SECONDS):
            looks += 1
            try:
                self.held = self.files.send_log(self.attempt, self.held)
                if looks % round(OUTPUT_SECONDS / LOG_SECONDS) == 0:
                    self.sent = self.files.send_changed(self.attempt, self.sent)
            except Stale:
                return
            except (httpx.HTTPError, EmulatorError, OSError) as exc:  # the api restarting, say: at the next look
                log.warning("could not send %s's files yet: %s", self.attempt.job_name, exc)

    def stop(self) -> None:
        self.stopping.set()
        self.thread.join()
        self.held = self.files.send_log(self.attempt, self.held)
        self.sent = self.files.send_changed(self.attempt, self.sent)


def from_env(node_id: str, data_dir: Path) -> FileSync | None:
    """The node's FileSync if it is detached (its environment names the api and its token), else None."""
    if not os.environ.get(TOKEN):
        return None
    return FileSync(os.environ[API_URL], node_id, os.environ[TOKEN], os.environ.get(CA, ""), data_dir)
