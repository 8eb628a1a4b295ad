"""A detached node's copies (workers/file_sync.py): the log is read from an offset without following a link the job
planted, and a rank's copies are removed without following one either (a job's link must not make the node delete
its own files); what the rank removed from its outputs is sent as removed."""

import json
import shutil

import httpx

from emulator import confined_tar
from emulator.dispatch.protocol import Attempt, Mount
from emulator.workers import file_sync

JOB = "blobs/acct/dcid.j"


def _attempt() -> Attempt:
    return Attempt(job_key="k", job_name="j", attempt=1, rank=0, world_size=1, image="i", command="c", env={},
                   labels={}, container_name="n", cpus=None, memory_bytes=None, gpus=0, network=None, user=None,
                   workdir="jobs/t/1/0/wd", code_dir="blobs/acct/code", log_file=f"{JOB}/user_logs/std_log.txt",
                   mounts=[Mount(f"{JOB}/outputs", "/o"), Mount(f"{JOB}/outputs/named", "/n")])


def test_forget_removes_the_ranks_copies_but_not_through_a_planted_link(tmp_path):
    data, precious = tmp_path / "data", tmp_path / "node-own"
    precious.mkdir()
    (precious / "keep.txt").write_text("the node's")
    (data / JOB / "outputs").mkdir(parents=True)
    (data / JOB / "outputs" / "named").symlink_to(precious)  # the job swapped a mount's folder for a link
    (data / "blobs/acct/code").mkdir(parents=True)
    (data / "blobs/acct/code/train.py").write_text("x")
    (data / JOB / "user_logs").mkdir()
    (data / JOB / "user_logs/std_log.txt").write_text("log")
    files = file_sync.FileSync("https://api:8443", "n1", "t", "", data)
    files.forget(_attempt())
    assert (precious / "keep.txt").read_text() == "the node's"
    assert not (data / JOB / "outputs").exists() and not (data / "blobs/acct/code").exists()
    assert not (data / JOB / "user_logs/std_log.txt").exists()


def test_the_log_is_read_from_an_offset_and_a_link_in_its_place_gives_nothing(tmp_path):
    log = tmp_path / JOB / "user_logs" / "std_log.txt"
    log.parent.mkdir(parents=True)
    log.write_bytes(b"hello\nworld\n")
    assert file_sync._read_from(tmp_path, f"{JOB}/user_logs/std_log.txt", 6, 100) == b"world\n"
    assert file_sync._read_from(tmp_path, f"{JOB}/user_logs/std_log.txt", 0, 3) == b"hel"
    log.unlink()
    (tmp_path / "secret").write_text("PRIVATE KEY")
    log.symlink_to(tmp_path / "secret")
    assert file_sync._read_from(tmp_path, f"{JOB}/user_logs/std_log.txt", 0, 100) == b""


def test_what_the_rank_removed_is_sent_as_removed_once_per_folder_then_what_changed(tmp_path):
    outputs = tmp_path / JOB / "outputs"
    (outputs / "old" / "deep").mkdir(parents=True)
    for name in ("a.txt", "old/1.pt", "old/deep/2.pt", "kept.txt"):
        (outputs / name).write_text(name)
    files = file_sync.FileSync("https://api:8443", "n1", "t", "", tmp_path)
    asked = []

    def answer(request: httpx.Request) -> httpx.Response:
        asked.append((request.method, request.url.path, request.read()))
        return httpx.Response(200, json={})
    files.client = httpx.Client(base_url="https://api:8443", transport=httpx.MockTransport(answer))
    sent = confined_tar.listing(tmp_path, (f"{JOB}/outputs",))
    (outputs / "a.txt").unlink()
    shutil.rmtree(outputs / "old")
    (outputs / "new.txt").write_text("new")
    now = files.send_changed(_attempt(), sent)
    (removed, put) = asked
    assert removed[:2] == ("POST", "/_emulator/nodes/n1/files/removed")
    assert json.loads(removed[2]) == {"paths": [f"{JOB}/outputs/a.txt", f"{JOB}/outputs/old"]}
    assert put[0] == "PUT" and b"new.txt" in put[2] and b"kept.txt" not in put[2]
    assert files.send_changed(_attempt(), now) == now and len(asked) == 2  # nothing since: nothing sent
