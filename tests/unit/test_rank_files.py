"""What a detached node may fetch and send back for a rank (dispatch/rank_files.py): its code snapshot, its
mounts' sources and its downloads' sources in; its writable mounts out; its own folder and the log never in
the tar; no path with '..' or absolute ever inside a scope."""

import pytest

from emulator.dispatch import rank_files
from emulator.dispatch.protocol import Attempt, Mount
from emulator.errors import PathEscape

JOB = "blobs/acct/azureml/ExperimentRun/dcid.j"
WD = "jobs/t/1/0/wd"


def _attempt(**changes) -> Attempt:
    base = dict(job_key="k", job_name="j", attempt=1, rank=0, world_size=1, image="i", command="c", env={},
                labels={}, container_name="n", cpus=None, memory_bytes=None, gpus=0, network=None, user=None,
                workdir=WD, code_dir="blobs/acct/code/snap", log_file=f"{JOB}/user_logs/std_log.txt",
                mounts=[Mount(f"{JOB}/outputs", "/mnt/azureml/wd/outputs"), Mount(f"{JOB}/logs", "/x/logs"),
                        Mount("blobs/acct/data/in", "/mnt/azureml/inputs/data", read_only=True),
                        Mount("jobs/t/1/0/downloads/copy", "/mnt/azureml/inputs/copy"),
                        Mount("blobs/acct/named/out", "/mnt/azureml/outputs/out")],
                downloads=[("blobs/acct/data/copied", "jobs/t/1/0/downloads/copy")], disk_limit_bytes=1234)
    return Attempt(**{**base, **changes})


def test_a_rank_reads_its_code_inputs_outputs_and_download_sources_but_not_its_own_folder():
    scope = rank_files.scope(_attempt())
    assert scope.reads == ("blobs/acct/code/snap", f"{JOB}/outputs", f"{JOB}/logs", "blobs/acct/data/in",
                           "blobs/acct/named/out", "blobs/acct/data/copied")
    assert not any(path.startswith("jobs/") for path in scope.reads)


def test_a_rank_writes_its_writable_mounts_only_not_its_inputs_copies_or_its_log():
    scope = rank_files.scope(_attempt())
    assert scope.writes == (f"{JOB}/outputs", f"{JOB}/logs", "blobs/acct/named/out")
    assert scope.log_file == f"{JOB}/user_logs/std_log.txt" and scope.max_bytes == 1234


def test_without_code_or_disk_limit_the_scope_still_holds_and_survives_its_record():
    scope = rank_files.scope(_attempt(code_dir=None, disk_limit_bytes=None))
    assert "blobs/acct/code/snap" not in scope.reads and scope.max_bytes == rank_files.DEFAULT_MAX_BYTES
    assert rank_files.Scope.from_json(scope.to_json()) == scope


@pytest.mark.parametrize("path, allowed", [
    (f"{JOB}/outputs", True), (f"{JOB}/outputs/a/b.txt", True), (f"./{JOB}/outputs/x", True),
    ("blobs/acct/named/out/model.pkl", True),
    (f"{JOB}/outputs2/x", False), (f"{JOB}/user_logs/std_log.txt", False), ("blobs/acct/data/in/x", False),
    (f"{JOB}", False), ("ca/ca.key", False), ("amlemu.db", False), ("jobs/t/1/0/wd/x", False),
])
def test_may_write_takes_only_paths_inside_a_writable_mount(path, allowed):
    assert rank_files.scope(_attempt()).may_write(path) is allowed


@pytest.mark.parametrize("path", [f"{JOB}/outputs/../../../../ca/ca.key", f"/{JOB}/outputs/x", "../x"])
def test_may_write_refuses_escapes_and_absolute_paths(path):
    with pytest.raises(PathEscape):
        rank_files.scope(_attempt()).may_write(path)
