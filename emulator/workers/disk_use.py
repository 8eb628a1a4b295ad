"""How much disk a job's files take, as the node measures them (workers/job_runner.py stops a job past its limit).

The job owns what it measures and may work against it: links are never followed (a symlink counts as itself,
not as what it points to), a file with many hard links counts once, a sparse file counts the blocks it really
holds, and the walk never leaves the file system it started on (a mount is not the job's disk). It moves with one
directory descriptor at a time (up through '..', checked against the descriptor it came down from), so no depth
of nesting can exhaust the node's descriptors or stack, and no folder swapped for a link mid-walk can lead it out.
A job that moves its folders about while measured is counted as far as the walk got: a lower bound.

Not seen: what a job's processes hold open after unlinking it (no process of the job is the node's to look at).
"""

import logging
import os
import stat
from collections.abc import Iterable
from pathlib import Path

from emulator import confined
from emulator.errors import PathEscape

log = logging.getLogger("amlemu.node")
_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_Seen = set[tuple[int, int]]


def bytes_used(data_dir: Path, paths: Iterable[str], folders: Iterable[Path] = ()) -> int:
    """The bytes of disk that the files and folders at `paths` (relative to `data_dir`; missing ones count 0)
    and the `folders` (a container's writable layer: the engine's, up to the folder itself) hold, each inode once
    across all of them."""
    seen: _Seen = set()
    total = 0
    for folder in folders:
        try:
            total += _tree(os.open(folder, _DIR), seen)
        except OSError:  # gone with its container
            continue
    for rel in paths:
        try:
            with confined.directory(data_dir, Path(rel).parent) as parent:
                total += _entry(parent, Path(rel).name, seen)
        except (OSError, PathEscape):  # not there (yet), or a link on its way: nothing of the job's there
            continue
    return total


def _held(info: os.stat_result, seen: _Seen) -> int:
    """The blocks an inode holds, the first time it is met."""
    key = (info.st_dev, info.st_ino)
    if key in seen:
        return 0
    seen.add(key)
    return info.st_blocks * 512


def _entry(parent: int, name: str, seen: _Seen) -> int:
    info = os.stat(name, dir_fd=parent, follow_symlinks=False)
    if not stat.S_ISDIR(info.st_mode):
        return _held(info, seen)
    return _tree(os.open(name, _DIR, dir_fd=parent), seen)


def _listing(fd: int, seen: _Seen) -> tuple[int, list[str]]:
    """The bytes of the folder's files (and of the folder itself), and the names of its subfolders."""
    total, folders = _held(os.fstat(fd), seen), []
    with os.scandir(fd) as entries:
        for entry in entries:
            try:
                info = entry.stat(follow_symlinks=False)
            except OSError:  # gone meanwhile
                continue
            if stat.S_ISDIR(info.st_mode):
                folders.append(entry.name)
            else:
                total += _held(info, seen)
    return total, folders


def _tree(fd: int, seen: _Seen) -> int:
    """Depth first under the open folder `fd` (which it closes), holding one descriptor at a time."""
    device = os.fstat(fd).st_dev
    try:
        total, folders = _listing(fd, seen)
        pending, trail = [folders], [os.fstat(fd)]  # per level: subfolders still to visit; the level's identity
        while pending:
            if not pending[-1]:
                pending.pop()
                trail.pop()
                if not pending:
                    break
                up = os.open("..", _DIR, dir_fd=fd)
                os.close(fd)
                fd = up
                here = os.fstat(fd)
                if (here.st_dev, here.st_ino) != (trail[-1].st_dev, trail[-1].st_ino):
                    log.info("a measured folder moved during its walk: counted as far as the walk got")
                    break
                continue
            try:
                child = os.open(pending[-1].pop(), _DIR, dir_fd=fd)
            except OSError:  # gone, or swapped for a link, meanwhile
                continue
            info = os.fstat(child)
            if info.st_dev != device:  # a mount: not the job's disk
                os.close(child)
                continue
            os.close(fd)
            fd = child
            size, folders = _listing(fd, seen)
            total += size
            pending.append(folders)
            trail.append(info)
        return total
    finally:
        os.close(fd)
