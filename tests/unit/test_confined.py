"""The node lays out a job's folders under the data directory without following a link a job planted:
nothing outside the job's own folders is copied, chmodded, appended to or mounted. Real files in a temporary
folder; `secret` stands for the emulator's CA folder and database beside the blob store."""

import os
import stat

import pytest

from emulator import confined
from emulator.dispatch import job_container
from emulator.dispatch.protocol import Attempt, Mount
from emulator.errors import PathEscape

JOB_DIR = "blobs/acct/azureml/ExperimentRun/dcid.j"


@pytest.fixture
def data(tmp_path):
    """A data directory: a CA folder with its key and a database (0600), a job's artifact folder."""
    (tmp_path / "ca").mkdir(mode=0o700)
    (tmp_path / "ca" / "ca.key").write_text("PRIVATE KEY")
    (tmp_path / "amlemu.db").write_text("db")
    for path in (tmp_path / "ca", tmp_path / "ca" / "ca.key", tmp_path / "amlemu.db"):
        path.chmod(0o700 if path.is_dir() else 0o600)
    (tmp_path / JOB_DIR / "outputs").mkdir(parents=True)
    return tmp_path


def modes(data) -> dict[str, int]:
    return {p: stat.S_IMODE(os.lstat(data / p).st_mode) for p in ("ca", "ca/ca.key", "amlemu.db")}


SECRET_MODES = {"ca": 0o700, "ca/ca.key": 0o600, "amlemu.db": 0o600}


def attempt(**changes) -> Attempt:
    base = dict(job_key="k", job_name="j", attempt=1, rank=0, world_size=1, image="i", command="c", env={},
                labels={}, container_name="n", cpus=None, memory_bytes=None, gpus=0, network=None, user=None,
                workdir="jobs/k/1/0/wd", code_dir=None, log_file=f"{JOB_DIR}/user_logs/std_log.txt",
                mounts=[Mount(f"{JOB_DIR}/outputs", "/mnt/azureml/wd/outputs")],
                make_dirs=[f"{JOB_DIR}/outputs", f"{JOB_DIR}/logs", f"{JOB_DIR}/user_logs"])
    return Attempt(**{**base, **changes})


# the pieces
@pytest.mark.parametrize("rel", ["/etc", "../ca", "a/../../ca", "a/../b"])
def test_paths_must_stay_below_the_root(data, rel):
    with pytest.raises(PathEscape):
        confined.parts(rel)


def test_make_dir_never_chmods_through_a_link(data):
    os.symlink(data / "ca", data / JOB_DIR / "outputs" / "named")
    with pytest.raises(PathEscape):
        confined.make_dir(data, f"{JOB_DIR}/outputs/named")
    with pytest.raises(PathEscape):  # nor below one
        confined.make_dir(data, f"{JOB_DIR}/outputs/named/deeper")
    assert modes(data) == SECRET_MODES and not (data / "ca" / "deeper").exists()


def test_make_dir_opens_a_real_folder_it_finds_and_makes_the_rest(data):
    confined.make_dir(data, f"{JOB_DIR}/outputs/a/b")
    assert stat.S_IMODE((data / JOB_DIR / "outputs" / "a" / "b").stat().st_mode) == 0o777


def test_appending_refuses_a_link_and_a_hard_link(data):
    logs = data / JOB_DIR / "user_logs"
    logs.mkdir()
    os.symlink(data / "ca" / "ca.key", logs / "std_log.txt")
    os.link(data / "amlemu.db", logs / "std_log_process_1.txt")
    for name in ("std_log.txt", "std_log_process_1.txt"):
        with pytest.raises(PathEscape), confined.appending(data, f"{JOB_DIR}/user_logs/{name}") as out:
            out.write("x")
    assert modes(data) == SECRET_MODES
    assert (data / "ca" / "ca.key").read_text() == "PRIVATE KEY" and (data / "amlemu.db").read_text() == "db"


def test_source_refuses_any_link_on_a_mounts_way(data):
    outputs = data / JOB_DIR / "outputs"
    os.symlink(data / "ca", outputs / "one")
    os.symlink(outputs / "one", outputs / "two")        # a chain
    os.symlink("../../../../../../amlemu.db", outputs / "db")  # relative, to a file
    (outputs / "real").mkdir()
    for name in ("one", "two", "two/ca.key", "db"):
        with pytest.raises(PathEscape):
            confined.source(data, f"{JOB_DIR}/outputs/{name}")
    assert confined.source(data, f"{JOB_DIR}/outputs/real") == (data / JOB_DIR / "outputs" / "real").resolve()


def test_copy_tree_leaves_links_and_hard_links_of_unreadable_files_out(data):
    src = data / "blobs/acct/code-1/src"
    (src / "pkg").mkdir(parents=True)
    (src / "train.py").write_text("print(1)")
    (src / "run.sh").write_text("#!/bin/sh")
    (src / "run.sh").chmod(0o755)
    (src / "pkg" / "m.py").write_text("x = 1")
    os.symlink(data / "ca", src / "ca")                   # a folder link
    os.symlink(data / "ca" / "ca.key", src / "pkg" / "key")  # a file link
    os.link(data / "amlemu.db", src / "db")               # a hard link to a file others cannot read
    dest = data / "jobs/k/1/0/wd"
    os.link(src / "train.py", src / "again.py")         # a hard link to a file anyone can read
    (src / "mine.txt").write_text("the job's own")
    os.chown(src / "mine.txt", 1000, 1000)
    (src / "mine.txt").chmod(0o600)
    skipped = confined.copy_tree(data, "blobs/acct/code-1/src", dest, reader=1000)
    assert sorted(skipped) == ["ca (a link)", "db (not readable by the job's user)", "pkg/key (a link)"]
    assert sorted(str(p.relative_to(dest)) for p in dest.rglob("*")) == \
        ["again.py", "mine.txt", "pkg", "pkg/m.py", "run.sh", "train.py"]
    assert stat.S_IMODE(dest.stat().st_mode) == 0o777 and stat.S_IMODE((dest / "pkg").stat().st_mode) == 0o777
    assert stat.S_IMODE((dest / "train.py").stat().st_mode) == 0o666
    assert stat.S_IMODE((dest / "run.sh").stat().st_mode) == 0o777  # its execute bits kept
    assert modes(data) == SECRET_MODES


def test_copy_tree_refuses_a_snapshot_reached_through_a_link(data):
    os.symlink(data / "ca", data / JOB_DIR / "outputs" / "code")
    with pytest.raises(PathEscape):
        confined.copy_tree(data, f"{JOB_DIR}/outputs/code", data / "jobs/k/1/0/wd")
    assert not (data / "jobs/k/1/0/wd" / "ca.key").exists()


# the node's layout of a rank, as a job (or an earlier job writing here) left the folders
def test_lay_out_follows_no_link_a_job_planted(data):
    code = data / JOB_DIR / "outputs"   # a code snapshot registered from a job's outputs, links and all
    (code / "train.py").write_text("print(1)")
    os.symlink(data / "ca", code / "ca")
    os.symlink(data / "ca" / "ca.key", code / "key.pem")
    os.link(data / "amlemu.db", code / "db")
    (data / JOB_DIR / "logs").mkdir()
    os.symlink(data / "ca", data / JOB_DIR / "logs" / "inner")
    job_container.lay_out(attempt(code_dir=f"{JOB_DIR}/outputs", user="1000:1000"), data)
    wd = data / "jobs/k/1/0/wd"
    assert sorted(p.name for p in wd.iterdir()) == ["train.py"]
    assert modes(data) == SECRET_MODES
    log = (data / JOB_DIR / "user_logs" / "std_log.txt").read_text()
    assert "left out of the code snapshot: ca (a link)" in log and "key.pem (a link)" in log
    assert "db (not readable by the job's user)" in log


@pytest.mark.parametrize("planted", ["user_logs", "logs", "outputs"])
def test_lay_out_refuses_a_job_folder_swapped_for_a_link(data, planted):
    folder = data / JOB_DIR / planted
    if folder.exists():
        folder.rmdir()
    os.symlink(data / "ca", folder)
    with pytest.raises(PathEscape):
        job_container.lay_out(attempt(), data)
    assert modes(data) == SECRET_MODES and sorted(os.listdir(data / "ca")) == ["ca.key"]


def test_lay_out_refuses_to_mount_an_input_through_a_link(data):
    os.symlink(data / "ca", data / JOB_DIR / "outputs" / "model")
    os.symlink(data / "amlemu.db", data / JOB_DIR / "outputs" / "db.csv")
    for source in ("model", "db.csv"):
        rank = attempt(mounts=[Mount(f"{JOB_DIR}/outputs/{source}", "/mnt/azureml/inputs/x", read_only=True)])
        with pytest.raises(PathEscape):
            job_container.lay_out(rank, data)
    assert modes(data) == SECRET_MODES


def test_lay_out_refuses_a_log_file_planted_as_a_link(data):
    (data / JOB_DIR / "user_logs").mkdir()
    os.symlink(data / "ca" / "ca.key", data / JOB_DIR / "user_logs" / "std_log.txt")
    with pytest.raises(PathEscape):
        job_container.lay_out(attempt(notes=["hello"]), data)
    assert modes(data) == SECRET_MODES and (data / "ca" / "ca.key").read_text() == "PRIVATE KEY"


def test_read_small_does_not_follow_a_link(data):
    os.symlink(data / "ca" / "ca.key", data / "exit")
    assert confined.read_small(data / "exit") is None
    (data / "real").write_text("3")
    assert confined.read_small(data / "real") == b"3"
