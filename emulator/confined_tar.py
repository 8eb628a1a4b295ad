"""Tar streams of files under a data directory, packed and unpacked without following links.

A detached node and the api exchange a rank's files as tar (dispatch/rank_files.py). Either side may hold
files a job planted (links, devices, hard links, names with '..'): packing sends plain files and folders only,
reached without following a link; unpacking takes plain files and folders only, at relative paths the caller
allows, within a byte and a member budget, and writes each through `confined` (no link on the way is followed,
a link where a file goes is replaced, never written through).
"""

import os
import secrets
import stat
import tarfile
from collections.abc import Callable, Iterable
from pathlib import PurePosixPath
from typing import IO

from emulator import confined
from emulator.errors import BadRequest, PathEscape, RequestTooLarge

_FILE = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_CHUNK = 1 << 20
MAX_MEMBERS = 200_000
FILE_MODE, DIR_MODE = 0o666, 0o777  # open to all, as confined.copy_tree makes copies: jobs run unprivileged


def _info(name: str, st: os.stat_result) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.mtime = int(st.st_mtime)
    if stat.S_ISDIR(st.st_mode):
        info.type, info.mode = tarfile.DIRTYPE, DIR_MODE
    else:
        info.type, info.size, info.mode = tarfile.REGTYPE, st.st_size, FILE_MODE | (st.st_mode & 0o111)
    return info


def _add_file(tar: tarfile.TarFile, parent: int, entry: str, name: str, skipped: list[str]) -> None:
    try:
        fd = os.open(entry, _FILE, dir_fd=parent)
    except OSError:  # a link (ELOOP), or gone meanwhile
        skipped.append(name)
        return
    with os.fdopen(fd, "rb") as file:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            skipped.append(name)
            return
        info = _info(name, st)
        tar.addfile(info, _Exactly(file, info.size))


class _Exactly:
    """The first `size` bytes of a file that may still grow (a job's log), zero-padded if it shrank: a tar member
    must hold what its header says."""

    def __init__(self, file: IO[bytes], size: int):
        self.file, self.left = file, size

    def read(self, n: int = -1) -> bytes:
        n = self.left if n < 0 else min(n, self.left)
        data = self.file.read(n)
        data += b"\0" * (n - len(data))
        self.left -= n
        return data


def _add_tree(tar: tarfile.TarFile, fd: int, name: str, skipped: list[str]) -> None:
    tar.addfile(_info(name, os.fstat(fd)))
    for entry in sorted(os.listdir(fd)):
        where = f"{name}/{entry}"
        st = os.stat(entry, dir_fd=fd, follow_symlinks=False)
        if stat.S_ISDIR(st.st_mode):
            child = os.open(entry, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=fd)
            try:
                _add_tree(tar, child, where, skipped)
            finally:
                os.close(child)
        elif stat.S_ISREG(st.st_mode):
            _add_file(tar, fd, entry, where, skipped)
        else:
            skipped.append(where)


def listing(root, rels: Iterable[str]) -> dict[str, tuple[int, int] | None]:
    """The plain files (size, mtime in ns) and folders (None) at and under `rels`, reached without following a
    link: what `pack` would send, to tell what changed since."""
    found: dict[str, tuple[int, int] | None] = {}

    def walk(fd: int, name: str) -> None:
        found[name] = None
        for entry in os.listdir(fd):
            st = os.stat(entry, dir_fd=fd, follow_symlinks=False)
            if stat.S_ISREG(st.st_mode):
                found[f"{name}/{entry}"] = (st.st_size, st.st_mtime_ns)
            elif stat.S_ISDIR(st.st_mode):
                child = os.open(entry, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=fd)
                try:
                    walk(child, f"{name}/{entry}")
                finally:
                    os.close(child)
    for rel in rels:
        try:
            with confined.directory(root, rel) as fd:
                walk(fd, "/".join(confined.parts(rel)))
        except (OSError, PathEscape):  # not there, not a folder, or through a link
            continue
    return found


def pack(root, rels: Iterable[str], out: IO[bytes], recursive: bool = True) -> list[str]:
    """Write a tar of the files and folders `rels` (relative to `root`) to `out`, each under its relative path
    (a folder without what it holds unless `recursive`). Paths that are not there (or pass through a link) are
    left out; so are links, devices and sockets inside. Returns what was left out."""
    skipped: list[str] = []
    with tarfile.open(fileobj=out, mode="w|", format=tarfile.PAX_FORMAT) as tar:
        for rel in rels:
            *folders, last = confined.parts(rel)
            name = "/".join([*folders, last])
            try:
                with confined.directory(root, "/".join(folders) or ".") as parent:
                    st = os.stat(last, dir_fd=parent, follow_symlinks=False)
                    if stat.S_ISDIR(st.st_mode) and not recursive:
                        tar.addfile(_info(name, st))
                    elif stat.S_ISDIR(st.st_mode):
                        with confined.directory(root, name) as fd:
                            _add_tree(tar, fd, name, skipped)
                    elif stat.S_ISREG(st.st_mode):
                        _add_file(tar, parent, last, name, skipped)
                    else:
                        skipped.append(name)
            except (FileNotFoundError, PathEscape):
                skipped.append(name)
    return skipped


def member_path(member: tarfile.TarInfo, allowed: Callable[[str], bool]) -> str:
    """The member's relative path, if it is a plain file or folder at a path `allowed` takes; else PathEscape."""
    if member.type not in (tarfile.REGTYPE, tarfile.AREGTYPE, tarfile.DIRTYPE):
        raise PathEscape(f"{member.name}: only plain files and folders are taken (not links, devices or fifos).")
    pieces = confined.parts(member.name)  # refuses absolute paths and '..'
    if not pieces or not allowed("/".join(pieces)):
        raise PathEscape(f"{member.name} is not a path this attempt may write.")
    return "/".join(pieces)


def _write(root, rel: str, source: IO[bytes], size: int, mode: int) -> None:
    """Write `size` bytes of `source` as the file `rel`: into a fresh name beside it, then renamed over it, so a
    link (or a hard link) already there is replaced, never written through."""
    folder, name = str(PurePosixPath(rel).parent), PurePosixPath(rel).name
    with confined.directory(root, folder, create=True) as parent:
        draft = f".amlemu-part-{secrets.token_hex(8)}"
        fd = os.open(draft, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600, dir_fd=parent)
        try:
            with os.fdopen(fd, "wb") as out:
                left = size
                while left and (chunk := source.read(min(_CHUNK, left))):
                    out.write(chunk)
                    left -= len(chunk)
                os.fchmod(out.fileno(), FILE_MODE | (mode & 0o111))
            os.replace(draft, name, src_dir_fd=parent, dst_dir_fd=parent)
        except BaseException:
            os.unlink(draft, dir_fd=parent)
            raise


def unpack(root, stream: IO[bytes], allowed: Callable[[str], bool], max_bytes: int) -> int:
    """Unpack the tar `stream` under `root`, refusing (PathEscape, RequestTooLarge) at the first member that is not
    a plain file or folder, lies outside what `allowed` takes, or passes the budget. Returns the bytes written."""
    try:
        return _unpack(root, stream, allowed, max_bytes)
    except tarfile.TarError as exc:
        raise BadRequest(f"The upload is not a readable tar stream: {exc}.", code="InvalidTar") from exc


def _unpack(root, stream: IO[bytes], allowed: Callable[[str], bool], max_bytes: int) -> int:
    written = members = 0
    with tarfile.open(fileobj=stream, mode="r|") as tar:
        for member in tar:
            members += 1
            if members > MAX_MEMBERS:
                raise RequestTooLarge(f"More than {MAX_MEMBERS} files and folders in one upload.")
            rel = member_path(member, allowed)
            if member.isdir():
                confined.make_dir(root, rel, DIR_MODE)
                continue
            written += member.size
            if written > max_bytes:
                raise RequestTooLarge(f"The files sent pass this attempt's bound of {max_bytes} bytes.")
            _write(root, rel, tar.extractfile(member), member.size, member.mode)
    return written
