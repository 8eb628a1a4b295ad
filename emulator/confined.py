"""Files under the data directory, reached without following links.

Jobs and model servers write into folders the emulator later copies, chmods, appends to or mounts, and they
may plant symlinks (or hard links) there. Everything the emulator does as root under its data directory goes
through here: each path is walked one component at a time with O_NOFOLLOW, modes change through descriptors
(never through a name that could be a link), and a mount source with a link anywhere on its way is refused
(the engine would follow it on the host).
"""

import errno
import os
import shutil
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path, PurePosixPath
from typing import IO

from emulator.errors import PathEscape

_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_CHUNK = 1 << 20


def parts(rel: str | os.PathLike) -> list[str]:
    """The components of a relative path; refused if absolute or with '..' (callers build these paths)."""
    pieces = [p for p in PurePosixPath(rel).parts if p != "."]
    if PurePosixPath(rel).is_absolute() or ".." in pieces:
        raise PathEscape(f"{rel} is not a path inside the data directory.")
    return pieces


def _step(parent: int, name: str, rel: str, create: bool) -> tuple[int, bool]:
    """Open `name` under the directory `parent` without following a link; (fd, made it)."""
    made = False
    if create:
        try:
            os.mkdir(name, 0o755, dir_fd=parent)
            made = True
        except FileExistsError:
            pass
    try:
        return os.open(name, _DIR, dir_fd=parent), made
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR):
            raise PathEscape(f"{rel}: '{name}' is a link or not a folder; the emulator does not follow links.") from exc
        raise


@contextmanager
def directory(root: Path, rel: str | os.PathLike, create: bool = False,
              mode: int | None = None) -> Iterator[int]:
    """A descriptor of the folder `rel` under `root`, every component reached without following links.
    With `create`, missing folders are made; `mode` is set on the last one, through its descriptor."""
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        for name in parts(rel):
            child, _made = _step(fd, name, str(rel), create)
            os.close(fd)
            fd = child
        if mode is not None:
            os.fchmod(fd, mode)
        yield fd
    finally:
        os.close(fd)


def make_dir(root: Path, rel: str | os.PathLike, mode: int = 0o777) -> None:
    """mkdir -p with `mode`, never through a link: a link on the way is refused, not followed."""
    with directory(root, rel, create=True, mode=mode):
        pass


@contextmanager
def appending(root: Path, rel: str | os.PathLike, mode: int = 0o666) -> Iterator[IO[str]]:
    """The file `rel` opened for appending (made, with its folders, if missing) and given `mode`. Refused
    when it is a link, not a regular file, or has another name (a hard link: its mode must not change)."""
    *folders, name = parts(rel)
    with directory(root, PurePosixPath(*folders) if folders else ".", create=True) as parent:
        try:
            fd = os.open(name, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644,
                         dir_fd=parent)
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise PathEscape(f"{rel} is a link; the emulator does not follow links.") from exc
            raise
    with os.fdopen(fd, "a") as out:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_nlink != 1:
            raise PathEscape(f"{rel} is not a plain file of its own (a hard link or a device).")
        os.fchmod(fd, mode)
        yield out


def remove(root: Path, rel: str | os.PathLike) -> bool:
    """Remove the file or folder `rel`, reached without following a link a job may have planted on its way; False
    when it is not there, or lies past a link (nothing there is the caller's to remove)."""
    *folders, name = parts(rel)
    try:
        with directory(root, "/".join(folders) or ".") as parent:
            if stat.S_ISDIR(os.stat(name, dir_fd=parent, follow_symlinks=False).st_mode):
                shutil.rmtree(name, dir_fd=parent)
            else:
                os.unlink(name, dir_fd=parent)
        return True
    except (FileNotFoundError, PathEscape):
        return False


def read_small(path: Path, limit: int = 4096) -> bytes | None:
    """At most `limit` bytes of a regular file, opened without following a link (None if it is not one)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        return os.read(fd, limit) if stat.S_ISREG(os.fstat(fd).st_mode) else None
    finally:
        os.close(fd)


def read_end(fd: int, lines: int, window: int = 64 * 1024) -> str:
    """The last `lines` lines of the open file `fd` (closed after), read from its end: a log may be large."""
    with open(fd, "rb", closefd=True) as file:
        file.seek(max(0, file.seek(0, os.SEEK_END) - window))
        text = file.read().decode(errors="replace")
    return "\n".join(text.rstrip("\n").splitlines()[-lines:])


def last_lines(root: Path, rel: str | os.PathLike, lines: int) -> str:
    """The end of the file `rel` under `root`, every component reached without following a link; "" when it
    is not there (yet) or is not what it should be."""
    *folders, name = parts(rel)
    try:
        with directory(root, PurePosixPath(*folders) if folders else ".") as parent:
            fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=parent)
    except (OSError, PathEscape):
        return ""
    return read_end(fd, lines)


def source(root: Path, rel: str | os.PathLike) -> Path:
    """`root/rel` for a bind mount: refused when any component is a link, since the engine follows links on
    the host (a job's symlink would mount the emulator's own files)."""
    base = Path(os.path.realpath(root))
    path = base.joinpath(*parts(rel))
    if os.path.realpath(path) != str(path):
        raise PathEscape(f"{rel} passes through a link; the emulator mounts only plain folders and files.")
    return path


def identity(root: Path, rel: str | os.PathLike) -> str:
    """'device:inode' of the folder or file `rel` under `root`, reached without following a link: what a bind
    mount of it shows inside the container (a mount is checked against it, see dispatch/job_container.mount_checks)."""
    pieces = parts(rel)
    with directory(root, PurePosixPath(*pieces[:-1]) if len(pieces) > 1 else ".") as parent:
        info = os.stat(pieces[-1], dir_fd=parent, follow_symlinks=False) if pieces else os.fstat(parent)
    if stat.S_ISLNK(info.st_mode):
        raise PathEscape(f"{rel} is a link; the emulator mounts only plain folders and files.")
    return f"{info.st_dev}:{info.st_ino}"


def _readable_by(info: os.stat_result, reader: int | None) -> bool:
    """Could user `reader` read the file itself (None: anyone may)? The copy is open to all."""
    return reader is None or bool(info.st_mode & stat.S_IROTH) or \
        (info.st_uid == reader and bool(info.st_mode & stat.S_IRUSR))


def _copy_file(src_dir: int, name: str, dst_dir: int, skipped: list[str], where: str, reader: int | None) -> None:
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=src_dir)
    except OSError as exc:
        if exc.errno != errno.ELOOP:
            raise
        skipped.append(f"{where}{name} (a link)")
        return
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            skipped.append(f"{where}{name} (not a plain file)")
            return
        # Root reads anything: a file (or a hard link to one) the job's user cannot read is not handed over.
        if not _readable_by(info, reader):
            skipped.append(f"{where}{name} (not readable by the job's user)")
            return
        out = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600,
                      dir_fd=dst_dir)
        try:
            while chunk := os.read(fd, _CHUNK):
                os.write(out, chunk)
            os.fchmod(out, 0o666 | (info.st_mode & 0o111))
        finally:
            os.close(out)
    finally:
        os.close(fd)


def _copy_into(src: int, dst: int, skipped: list[str], where: str, reader: int | None) -> None:
    for entry in sorted(os.listdir(src)):
        info = os.stat(entry, dir_fd=src, follow_symlinks=False)
        if stat.S_ISDIR(info.st_mode):
            os.mkdir(entry, 0o700, dir_fd=dst)
            sub_src, _ = _step(src, entry, where + entry, create=False)
            sub_dst, _ = _step(dst, entry, where + entry, create=False)
            try:
                os.fchmod(sub_dst, 0o777)
                _copy_into(sub_src, sub_dst, skipped, f"{where}{entry}/", reader)
            finally:
                os.close(sub_src)
                os.close(sub_dst)
        else:
            _copy_file(src, entry, dst, skipped, where, reader)


def copy_tree(root: Path, rel: str | os.PathLike, dest: Path, reader: int | None = None) -> list[str]:
    """Copy the folder `root/rel` into the new folder `dest` (open to all: jobs run unprivileged), following
    no link: links, files that are not plain and files user `reader` could not read are left out, and
    listed in the result."""
    skipped: list[str] = []
    dest.mkdir(parents=True)
    with directory(root, rel) as src, directory(dest, ".", mode=0o777) as dst:
        _copy_into(src, dst, skipped, "", reader)
    return skipped


def copy_file(root: Path, rel: str | os.PathLike, dest: Path, reader: int | None = None) -> list[str]:
    """Copy the file `root/rel` into the new folder `dest`, under its own name, as `copy_tree` copies files."""
    *folders, name = parts(rel)
    skipped: list[str] = []
    dest.mkdir(parents=True)
    with directory(root, PurePosixPath(*folders) if folders else ".") as src, \
            directory(dest, ".", mode=0o777) as dst:
        _copy_file(src, name, dst, skipped, "", reader)
    return skipped
