"""A job's disk use as the node measures it, against a job that tries to make it lie (real files in tmp_path)."""

import os

from emulator.dispatch.job_container import seen_layer
from emulator.workers.disk_use import bytes_used

MIB = 2**20


def _write(path, size: int) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"x" * size)


def test_files_and_folders_count_the_blocks_they_hold(tmp_path):
    _write(tmp_path / "job" / "wd" / "a.bin", 3 * MIB)
    _write(tmp_path / "job" / "wd" / "deep" / "er" / "b.bin", MIB)
    _write(tmp_path / "log.txt", MIB)
    used = bytes_used(tmp_path, ["job", "log.txt"])
    assert 5 * MIB <= used < 5 * MIB + 64 * 1024  # the data, and a few blocks of folders
    assert bytes_used(tmp_path, ["missing", "job/missing.txt"]) == 0


def test_a_link_out_of_the_jobs_folders_counts_as_itself_not_as_its_target(tmp_path):
    _write(tmp_path / "elsewhere" / "big.bin", 8 * MIB)
    (tmp_path / "job").mkdir()
    (tmp_path / "job" / "to-file").symlink_to(tmp_path / "elsewhere" / "big.bin")
    (tmp_path / "job" / "to-folder").symlink_to(tmp_path / "elsewhere")
    assert bytes_used(tmp_path, ["job"]) < MIB
    (tmp_path / "linked").symlink_to(tmp_path / "elsewhere")  # a measured path that is itself a link
    assert bytes_used(tmp_path, ["linked", "linked/big.bin"]) < 64 * 1024  # the link alone


def test_hard_links_count_their_file_once_across_all_the_paths(tmp_path):
    _write(tmp_path / "job" / "wd" / "data.bin", 4 * MIB)
    for n in range(20):
        os.link(tmp_path / "job" / "wd" / "data.bin", tmp_path / "job" / "wd" / f"copy-{n}")
    os.link(tmp_path / "job" / "wd" / "data.bin", tmp_path / "outputs.bin")
    assert bytes_used(tmp_path, ["job", "outputs.bin", "job/wd"]) < 5 * MIB


def test_a_sparse_file_counts_what_it_holds_not_its_apparent_size(tmp_path):
    (tmp_path / "job").mkdir()
    with open(tmp_path / "job" / "sparse", "wb") as out:
        out.truncate(2**40)  # a terabyte that takes nothing
    assert bytes_used(tmp_path, ["job"]) < MIB


DEPTH = 1100  # beyond Python's recursion limit and the usual 1024 descriptors a process may hold


def _descend(fd: int, depth: int, make: bool) -> int:
    """The folder `depth` levels of "d" below `fd` (which it closes), one descriptor at a time."""
    for _ in range(depth):
        if make:
            os.mkdir("d", dir_fd=fd)
        deeper = os.open("d", os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
        os.close(fd)
        fd = deeper
    return fd


def _remove_chain(fd: int, depth: int) -> None:
    """Bottom up, as pytest's own clean-up cannot (it recurses)."""
    for _ in range(depth):
        up = os.open("..", os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
        os.close(fd)
        os.rmdir("d", dir_fd=up)
        fd = up
    os.close(fd)


def test_nesting_deeper_than_any_descriptor_or_stack_limit_is_measured_all_the_way(tmp_path):
    (tmp_path / "job").mkdir()
    bottom = _descend(os.open(tmp_path / "job", os.O_RDONLY | os.O_DIRECTORY), DEPTH, make=True)
    try:
        with open(os.open("bottom.bin", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=bottom), "wb") as out:
            out.write(b"x" * 2 * MIB)
        assert bytes_used(tmp_path, ["job"]) >= 2 * MIB
    finally:
        os.unlink("bottom.bin", dir_fd=bottom)
        _remove_chain(bottom, DEPTH)
    assert not any((tmp_path / "job").iterdir())


def test_a_containers_layer_is_found_under_the_engines_root_as_the_node_sees_it(tmp_path):
    (tmp_path / "overlay2" / "abc" / "diff").mkdir(parents=True)
    layer = "/var/lib/docker/overlay2/abc/diff"
    assert seen_layer(layer, "/var/lib/docker", tmp_path) == tmp_path / "overlay2" / "abc" / "diff"
    assert seen_layer("/elsewhere/overlay2/abc/diff", "/var/lib/docker", tmp_path) is None
    assert seen_layer("/var/lib/docker/overlay2/gone/diff", "/var/lib/docker", tmp_path) is None  # not mounted
    assert seen_layer(None, "/var/lib/docker", tmp_path) is None
    assert seen_layer(layer, None, tmp_path) is None  # the engine's root unknown: no mount of it on the node


def test_a_layer_folder_counts_beside_the_data_folders(tmp_path):
    _write(tmp_path / "layer" / "tmp" / "fill", 2 * MIB)
    _write(tmp_path / "data" / "job" / "wd" / "a", MIB)
    assert bytes_used(tmp_path / "data", ["job"], [tmp_path / "layer", tmp_path / "missing"]) >= 3 * MIB
