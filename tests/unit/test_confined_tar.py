"""The tar streams a detached node and the api exchange (confined_tar.py): packing sends plain files and folders
only, never following a link a job planted; unpacking takes plain files and folders only, inside what the
caller allows, within a budget, and never writes through a link. `secret` stands for the emulator's own files."""

import io
import os
import tarfile

import pytest

from emulator import confined_tar
from emulator.errors import BadRequest, PathEscape, RequestTooLarge

OUT = "blobs/acct/dcid.j/outputs"


def _inside_out(rel: str) -> bool:
    return rel == OUT or rel.startswith(OUT + "/")


@pytest.fixture
def data(tmp_path):
    root = tmp_path / "data"
    (root / OUT / "sub").mkdir(parents=True)
    (root / OUT / "model.txt").write_text("weights")
    (root / OUT / "sub" / "run.sh").write_text("#!/bin/sh\n")
    (root / OUT / "sub" / "run.sh").chmod(0o755)
    (tmp_path / "secret").write_text("PRIVATE KEY")
    return root


def _tar(*members: tuple[tarfile.TarInfo, bytes | None]) -> io.BytesIO:
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w") as tar:
        for info, body in members:
            if body is not None:
                info.size = len(body)
            tar.addfile(info, io.BytesIO(body) if body is not None else None)
    out.seek(0)
    return out


def _member(name: str, kind: bytes = tarfile.REGTYPE, link: str = "") -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type, info.linkname = kind, link
    return info


def test_pack_then_unpack_gives_the_same_files_open_to_the_job_user(data, tmp_path):
    stream = io.BytesIO()
    assert confined_tar.pack(data, [OUT], stream) == []
    stream.seek(0)
    other = tmp_path / "node"
    other.mkdir()
    written = confined_tar.unpack(other, stream, _inside_out, 1 << 20)
    assert written == len("weights") + len("#!/bin/sh\n")
    assert (other / OUT / "model.txt").read_text() == "weights"
    assert os.stat(other / OUT / "sub" / "run.sh").st_mode & 0o777 == 0o777
    assert os.stat(other / OUT / "model.txt").st_mode & 0o777 == 0o666


def test_pack_leaves_out_links_fifos_and_paths_through_links(data, tmp_path):
    (data / OUT / "escape").symlink_to(tmp_path / "secret")
    (data / OUT / "escape_dir").symlink_to(tmp_path)
    os.mkfifo(data / OUT / "gate")
    (data / "blobs/acct/linked").symlink_to(data / OUT)
    stream = io.BytesIO()
    skipped = confined_tar.pack(data, [OUT, "blobs/acct/linked", "blobs/acct/linked/model.txt", "missing/x"], stream)
    stream.seek(0)
    names = tarfile.open(fileobj=stream).getnames()
    assert sorted(names) == sorted([OUT, f"{OUT}/model.txt", f"{OUT}/sub", f"{OUT}/sub/run.sh"])
    assert set(skipped) == {f"{OUT}/escape", f"{OUT}/escape_dir", f"{OUT}/gate", "blobs/acct/linked",
                            "blobs/acct/linked/model.txt", "missing/x"}
    assert b"PRIVATE KEY" not in stream.getvalue()


@pytest.mark.parametrize("member", [
    _member(f"{OUT}/link", tarfile.SYMTYPE, "/etc/passwd"),
    _member(f"{OUT}/hard", tarfile.LNKTYPE, "../../../secret"),
    _member(f"{OUT}/dev", tarfile.CHRTYPE),
    _member(f"{OUT}/fifo", tarfile.FIFOTYPE),
    _member(f"{OUT}/../../../../secret"),
    _member(f"/{OUT}/abs"),
    _member("ca/ca.key"),
    _member("blobs/acct/dcid.j/outputs2/x"),
], ids=["symlink", "hardlink", "device", "fifo", "dotdot", "absolute", "outside", "sibling"])
def test_unpack_refuses_links_devices_escapes_and_paths_outside_the_attempt(data, tmp_path, member):
    body = None if member.type in (tarfile.SYMTYPE, tarfile.LNKTYPE, tarfile.CHRTYPE, tarfile.FIFOTYPE) else b"x"
    with pytest.raises(PathEscape):
        confined_tar.unpack(data, _tar((member, body)), _inside_out, 1 << 20)
    assert (tmp_path / "secret").read_text() == "PRIVATE KEY"
    assert sorted(os.listdir(data / OUT)) == ["model.txt", "sub"]


def test_unpack_replaces_a_planted_link_instead_of_writing_through_it(data, tmp_path):
    (data / OUT / "model.txt").unlink()
    (data / OUT / "model.txt").symlink_to(tmp_path / "secret")
    confined_tar.unpack(data, _tar((_member(f"{OUT}/model.txt"), b"new weights")), _inside_out, 1 << 20)
    assert (tmp_path / "secret").read_text() == "PRIVATE KEY"
    assert not (data / OUT / "model.txt").is_symlink() and (data / OUT / "model.txt").read_text() == "new weights"


def test_unpack_refuses_a_folder_on_the_way_that_is_a_link(data, tmp_path):
    (tmp_path / "elsewhere").mkdir()
    (data / OUT / "sub" / "run.sh").unlink()
    (data / OUT / "sub").rmdir()
    (data / OUT / "sub").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(PathEscape):
        confined_tar.unpack(data, _tar((_member(f"{OUT}/sub/x"), b"x")), _inside_out, 1 << 20)
    assert os.listdir(tmp_path / "elsewhere") == []


def test_unpack_stops_past_its_byte_budget_and_refuses_what_is_not_a_tar(data):
    with pytest.raises(RequestTooLarge):
        confined_tar.unpack(data, _tar((_member(f"{OUT}/a"), b"x" * 10), (_member(f"{OUT}/b"), b"y" * 10)),
                            _inside_out, 15)
    assert not (data / OUT / "b").exists()
    with pytest.raises(BadRequest):
        confined_tar.unpack(data, io.BytesIO(b"not a tar at all" * 100), _inside_out, 1 << 20)


def test_listing_tells_files_and_folders_without_following_links_and_pack_can_send_folders_bare(data, tmp_path):
    (data / OUT / "escape").symlink_to(tmp_path)
    found = confined_tar.listing(data, [OUT, "missing"])
    assert set(found) == {OUT, f"{OUT}/model.txt", f"{OUT}/sub", f"{OUT}/sub/run.sh"}
    assert found[OUT] is None and found[f"{OUT}/model.txt"][0] == len("weights")
    stream = io.BytesIO()
    confined_tar.pack(data, [f"{OUT}/sub"], stream, recursive=False)
    stream.seek(0)
    assert tarfile.open(fileobj=stream).getnames() == [f"{OUT}/sub"]
